/// Integers in the API's one spelling: ASCII decimal digits, no sign, no leading zero (`0` alone is
/// zero). `Int64("+1")` and `Int64("01")` are both 1, so without this rule two spellings would name one
/// notification, and a client's typo would act on something it did not write.
public enum CanonicalInteger {
    /// The value of `text`, or `nil` when it is not canonical or does not fit an `Int64`.
    public static func parse(_ text: some StringProtocol) -> Int64? {
        let utf8 = text.utf8
        guard let first = utf8.first, (1...19).contains(utf8.count),
            utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            first != UInt8(ascii: "0") || utf8.count == 1
        else { return nil }
        return Int64(text)
    }

    /// A positive id (`1…Int64.max`), canonical.
    public static func id(_ text: some StringProtocol) -> Int64? {
        parse(text).flatMap { $0 > 0 ? $0 : nil }
    }
}
