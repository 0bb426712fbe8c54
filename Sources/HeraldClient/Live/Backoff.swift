/// Waits between reconnection attempts: exponential, capped, with full jitter (a random wait below the
/// exponential one), so that clients a server dropped together do not come back together.
enum Backoff {
    static func delay(attempt: Int, initial: Duration, maximum: Duration) -> Duration {
        let exponential = initial * (1 << min(max(attempt - 1, 0), 20))
        let ceiling = min(exponential, maximum)
        let nanoseconds = ceiling.components.seconds * 1_000_000_000 + ceiling.components.attoseconds / 1_000_000_000
        return .nanoseconds(Int64.random(in: 0...max(nanoseconds, 1)))
    }
}
