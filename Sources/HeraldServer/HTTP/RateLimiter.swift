import Synchronization

/// Token buckets by key (a session, an address), one `RateLimit` for all.
///
/// Only keys that were refused recently or spent tokens are held: a full bucket is the same as none,
/// so full ones are dropped every `sweepInterval`, which keeps memory to the keys active in the last
/// few seconds.
final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    let limit: RateLimit
    private let clock: @Sendable () -> Double
    private let state: Mutex<State>
    static var sweepInterval: Double { 10 }

    private struct State: Sendable {
        var buckets: [Key: TokenBucket] = [:]
        var lastSweep: Double
    }

    /// `clock`: seconds on a monotonic clock (tests pass their own).
    init(_ limit: RateLimit, clock: @escaping @Sendable () -> Double) {
        self.limit = limit
        self.clock = clock
        self.state = Mutex(State(lastSweep: clock()))
    }

    /// Takes a token of `key`: `nil` when the request may go on, else the seconds to wait.
    func take(_ key: Key) -> Double? {
        let now = clock()
        return state.withLock { state in
            sweepIfDue(&state, now: now)
            var bucket = state.buckets[key] ?? TokenBucket(limit, now: now)
            let wait = bucket.take(limit, now: now)
            state.buckets[key] = bucket
            return wait
        }
    }

    /// Whether `key` has a token, without taking it: `nil` when it has, else the seconds to wait.
    func check(_ key: Key) -> Double? {
        let now = clock()
        return state.withLock { state in
            guard var bucket = state.buckets[key] else { return nil }
            bucket.refill(limit, now: now)
            state.buckets[key] = bucket
            let wait = bucket.wait(limit)
            return wait > 0 ? wait : nil
        }
    }

    /// Keys held (tests watch the sweep with it).
    var count: Int {
        state.withLock { $0.buckets.count }
    }

    private func sweepIfDue(_ state: inout State, now: Double) {
        guard now - state.lastSweep >= Self.sweepInterval else { return }
        state.lastSweep = now
        let limit = self.limit
        state.buckets = state.buckets.filter { !$0.value.isFull(limit, now: now) }
    }
}
