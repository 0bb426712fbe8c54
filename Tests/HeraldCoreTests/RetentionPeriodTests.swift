import HeraldCore
import Testing

@Suite("Retention periods")
struct RetentionPeriodTests {
    @Test func parsesWholeUnitsAndWritesTheLargestThatDivides() {
        for (text, seconds, written) in [
            ("90d", 7_776_000, "90d"), ("12h", 43_200, "12h"), ("24h", 86_400, "1d"), ("90m", 5_400, "90m"), ("120m", 7_200, "2h"),
            ("45s", 45, "45s"), ("3600s", 3_600, "1h"), ("36600d", 3_162_240_000, "36600d"),
        ] as [(String, Int64, String)] {
            let period = RetentionPeriod(text)
            #expect(period?.seconds == seconds, "\(text)")
            #expect(period?.description == written, "\(text)")
        }
    }

    @Test func refusesAnythingElse() {
        for text in ["", "d", "0s", "0d", "-1h", "1.5h", "1w", "1 d", "36601d", "h1", "1dd", "９d", "999999999999999d", "1D"] {
            #expect(RetentionPeriod(text) == nil, "\(text)")
        }
    }
}
