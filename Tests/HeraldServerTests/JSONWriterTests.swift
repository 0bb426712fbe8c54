import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import HeraldServer

@Suite("JSONWriter")
struct JSONWriterTests {
    /// Every string survives a round trip through a standard JSON parser: all control characters,
    /// quotes, backslashes, non-ASCII and astral characters.
    @Test func stringsRoundTripThroughAParser() throws {
        let controls = String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) })
        let samples = ["", "plain", "quote \" and backslash \\ and slash /", controls, "é ü 中文 🚀 \u{2028}", "end\\"]
        var writer = JSONWriter()
        writer.beginArray()
        for sample in samples { writer.string(sample) }
        writer.endArray()
        let parsed = try JSONSerialization.jsonObject(with: Data(writer.buffer.readableBytesView)) as? [String]
        #expect(parsed == samples)
    }

    @Test func nestingIntegersAndLiterals() throws {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("min")
        writer.integer(Int64.min)
        writer.key("max")
        writer.integer(Int64.max)
        writer.key("zero")
        writer.integer(0)
        writer.key("list")
        writer.beginArray()
        writer.beginObject()
        writer.endObject()
        writer.beginArray()
        writer.endArray()
        writer.bool(true)
        writer.null()
        writer.raw(Array(#"{"a":[1,2]}"#.utf8))
        writer.endArray()
        writer.key("flag")
        writer.bool(false)
        writer.endObject()
        let text = String(buffer: writer.buffer)
        #expect(text == #"{"min":-9223372036854775808,"max":9223372036854775807,"zero":0,"list":[{},[],true,null,{"a":[1,2]}],"flag":false}"#)
        #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) is [String: Any])
    }

    /// Error bodies come out byte for byte as documented, `code` before `message`, every time (they
    /// once went through `JSONEncoder`, whose key order changed from one error to the next).
    @Test func errorBodiesHaveAFixedShape() {
        let error = APIError(.badRequest, code: "invalid_limit", message: "limit must be \"1\"–100.")
        for _ in 0..<20 {
            #expect(String(buffer: error.body) == #"{"error":{"code":"invalid_limit","message":"limit must be \"1\"–100."}}"#)
        }
    }
}
