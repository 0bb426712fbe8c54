/// Lower-case hexadecimal encoding.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var characters: [UInt8] = []
        characters.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            characters.append(digits[Int(byte >> 4)])
            characters.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: characters, as: UTF8.self)
    }

    /// Decodes an even-length string of hex digits (either case); `nil` if it is not one.
    public static func decode(_ text: String) -> [UInt8]? {
        decode(text.utf8)
    }

    /// Decodes an even number of hex digits' bytes (either case); `nil` if they are not that.
    public static func decode(_ characters: some Collection<UInt8>) -> [UInt8]? {
        guard characters.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        var index = characters.startIndex
        while index != characters.endIndex {
            let next = characters.index(after: index)
            guard let high = nibble(characters[index]), let low = nibble(characters[next]) else { return nil }
            bytes.append(high << 4 | low)
            index = characters.index(after: next)
        }
        return bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
