import Foundation
import Testing

@testable import HeraldClient

/// The client's reader and writer of Herald's times (`RFC3339`, shared with the server) agree with
/// Foundation's to the millisecond on every shape Herald writes, and take the other RFC 3339 shapes.
@Suite("Millisecond dates")
struct MillisecondDateTranscoderTests {
    @Test func readsWhatFoundationReadsToTheMillisecond() throws {
        let transcoder = MillisecondDateTranscoder()
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            // Any millisecond from 1970 to 2100, leap days and year ends included by chance.
            let milliseconds = Int64.random(in: 0..<4_102_444_800_000, using: &random)
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let text = date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            // The same millisecond as Foundation's own reading (a Double may sit a hair off it).
            let foundation = try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
            #expect(Self.milliseconds(try transcoder.decode(text)) == Self.milliseconds(foundation), "\(text)")
            #expect(Self.milliseconds(try transcoder.decode(transcoder.encode(date))) == milliseconds)
            #expect(try transcoder.encode(date) == text || Self.milliseconds(foundation) != milliseconds, "\(text)")
        }
        for edge in ["2024-02-29T23:59:59.999Z", "2000-01-01T00:00:00.000Z", "1999-12-31T23:59:59.001Z"] {
            #expect(
                Self.milliseconds(try transcoder.decode(edge))
                    == Self.milliseconds(try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(edge))
            )
        }
        // Other shapes go to Foundation: without milliseconds, with an offset; nonsense is an error.
        #expect(try transcoder.decode("2024-01-01T00:00:00Z") == Date(timeIntervalSince1970: 1_704_067_200))
        #expect(try transcoder.decode("2024-01-01T01:00:00.000+01:00") == Date(timeIntervalSince1970: 1_704_067_200))
        #expect(throws: (any Error).self) { try transcoder.decode("2024-13-01T00:00:00.000Z") }
        #expect(throws: (any Error).self) { try transcoder.decode("yesterday") }
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }
}
