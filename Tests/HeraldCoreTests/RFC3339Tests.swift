import Foundation
import HeraldCore
import Testing

@Suite struct RFC3339Tests {
    /// The hand-written formatter agrees with Foundation's on every day from 1900 to 2130 at random
    /// times of day, and rounds stored microseconds down to the millisecond.
    @Test func formatsLikeFoundationToTheMillisecond() {
        var generator = SystemRandomNumberGenerator()
        let foundation = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let first = Int64(-25_567)
        let last = Int64(58_436)  // 1900-01-01 … 2130-01-01 as days since 1970
        for day in first...last {
            let microsecond = Int64.random(in: 0..<86_400_000_000, using: &generator)
            let micros = day * 86_400_000_000 + microsecond
            // As PostgreSQL's timestamps arrive: whole microseconds in a Double.
            let date = Date(timeIntervalSinceReferenceDate: Double(micros - 978_307_200_000_000) / 1_000_000)
            let milliseconds = micros >= 0 ? micros / 1000 : (micros - 999) / 1000
            // Foundation's answer for an instant safely inside the same millisecond.
            let expected = foundation.format(Date(timeIntervalSince1970: (Double(milliseconds) + 0.25) / 1000))
            #expect(RFC3339.string(from: date) == expected, "day \(day)")
            #expect(RFC3339.milliseconds(from: date) == milliseconds)
        }
    }

    @Test func exactMillisecondsDoNotSlipBack() {
        // 1700000000.123 is not exact in binary; it must still print .123, not .122.
        let date = Date(timeIntervalSince1970: 1_700_000_000.123)
        #expect(RFC3339.string(from: date) == "2023-11-14T22:13:20.123Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: 951_782_400.5)) == "2000-02-29T00:00:00.500Z")
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
    }

    @Test func parsesWhatItPrints() {
        let date = Date(timeIntervalSince1970: 1_763_789_233.456)
        #expect(RFC3339.date(from: RFC3339.string(from: date)).map(RFC3339.milliseconds) == 1_763_789_233_456)
    }
}
