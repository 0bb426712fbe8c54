import Foundation
import Synchronization

/// What the soak's load saw: every request's latency and outcome, by minute and kind, and every
/// failure with its time.
final class SoakRecorder: Sendable {
    struct Failure: Sendable {
        /// Seconds since the load started.
        var at: Double
        var kind: String
        var detail: String
    }

    private struct Bucket {
        var latencies: [Double] = []
        var errors = 0
    }

    private struct State {
        var buckets: [Int: [String: Bucket]] = [:]
        var failures: [Failure] = []
    }

    let start = ContinuousClock.now
    private let state = Mutex(State())

    /// Seconds since the load started.
    var elapsed: Double { elapsedSeconds(ContinuousClock.now - start) }

    /// A request of `kind` that began at `began`; `failure` says what went wrong, if anything.
    func record(_ kind: String, began: ContinuousClock.Instant, failure: String? = nil) {
        let now = ContinuousClock.now
        let minute = Int(elapsedSeconds(now - start) / 60)
        let milliseconds = elapsedSeconds(now - began) * 1000
        let at = elapsedSeconds(now - start)
        state.withLock { state in
            state.buckets[minute, default: [:]][kind, default: Bucket()].latencies.append(milliseconds)
            if let failure {
                state.buckets[minute, default: [:]][kind, default: Bucket()].errors += 1
                state.failures.append(Failure(at: at, kind: kind, detail: failure))
            }
        }
    }

    var failures: [Failure] { state.withLock { $0.failures } }

    /// `minute,kind,requests,per_second,p50_ms,p99_ms,errors`, one row per minute and kind.
    func csv() -> String {
        let buckets = state.withLock { $0.buckets }
        var lines = ["minute,kind,requests,per_second,p50_ms,p99_ms,errors"]
        for minute in buckets.keys.sorted() {
            for (kind, bucket) in buckets[minute]!.sorted(by: { $0.key < $1.key }) {
                let sorted = bucket.latencies.sorted()
                func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
                lines.append(
                    "\(minute),\(kind),\(sorted.count),\(format(Double(sorted.count) / 60, digits: 1)),"
                        + "\(format(percentile(0.5), digits: 2)),\(format(percentile(0.99), digits: 2)),\(bucket.errors)"
                )
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
