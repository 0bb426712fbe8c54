import Hummingbird
import NIOCore

/// Writes JSON text straight into a `ByteBuffer`, for the responses on the sync path.
///
/// `JSONEncoder` builds a tree of boxed values and walks it again to print it; on an incremental poll
/// that was over a third of the request's CPU time (see docs/decisions/2026-11-22-json-writer.md). Bodies written here go
/// out in one pass, and a notification's data — JSON text from the database — is copied in as it is.
///
/// Commas are placed by one flag: every value and closing bracket sets it, every opening bracket and
/// key clears it, so nesting needs no stack.
///
/// The text collects in a byte array and becomes a `ByteBuffer` once, at the end: appending to an
/// array is a few inlined instructions, while every `ByteBuffer` write checks capacity and
/// uniqueness out of line, and an answer makes hundreds of small writes for its keys alone
/// (docs/decisions/2026-11-22-json-writer.md).
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    private var needsComma = false

    init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    /// The text written so far.
    var buffer: ByteBuffer { ByteBuffer(bytes: bytes) }

    /// The text written since the last take, for a body sent in parts; the writer goes on where it was.
    mutating func takeBuffer() -> ByteBuffer {
        defer { bytes.removeAll(keepingCapacity: true) }
        return buffer
    }

    mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// An object key; keys are the API's own snake_case names, never user input, so they need no escaping.
    mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// An object key from the API's own names that is not a literal (an enumeration's raw value).
    mutating func key(_ name: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: name.utf8)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    mutating func string(_ value: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    append("u00")
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0xF)])
                }
                start = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    mutating func string(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    mutating func integer(_ value: some BinaryInteger) {
        separate()
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = UInt64(value.magnitude)
        // Digits are produced back to front into scratch space, then go out in one write.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
        needsComma = true
    }

    mutating func bool(_ value: Bool) {
        separate()
        append(value ? "true" : "false")
        needsComma = true
    }

    mutating func null() {
        separate()
        append("null")
        needsComma = true
    }

    /// Text that already is one JSON value (a `jsonb` column's output), copied as it is.
    mutating func raw(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    /// An array of strings.
    mutating func strings(_ values: [String]) {
        beginArray()
        for value in values { string(value) }
        endArray()
    }

    private mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}

/// A response body written with `JSONWriter`.
protocol JSONWritable: ResponseGenerator {
    func write(to writer: inout JSONWriter)
}

extension JSONWritable {
    func response(from request: Request, context: some RequestContext) throws -> Response {
        var writer = JSONWriter()
        write(to: &writer)
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: writer.buffer))
    }
}
