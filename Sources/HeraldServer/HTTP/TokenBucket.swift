/// A request rate: `perSecond` tokens come back each second, up to `burst` held at once.
public struct RateLimit: Sendable, Equatable {
    public var perSecond: Double
    public var burst: Int

    public init(perSecond: Double, burst: Int) {
        precondition(perSecond > 0 && burst >= 1, "a rate limit needs a positive rate and a burst of at least one")
        self.perSecond = perSecond
        self.burst = burst
    }

    /// `RATE/BURST` (`20/100`: twenty a second, a hundred at once); `nil` for anything else.
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let rate = Double(parts[0]), rate > 0, rate.isFinite, let burst = Int(parts[1]), burst >= 1 else { return nil }
        self.init(perSecond: rate, burst: burst)
    }

    public var description: String {
        let rate = perSecond == perSecond.rounded() ? String(Int(perSecond)) : String(perSecond)
        return "\(rate)/\(burst)"
    }
}

/// One key's tokens (see `RateLimit`): a request takes one, and is refused while none is left.
struct TokenBucket: Sendable {
    private(set) var tokens: Double
    private var updated: Double

    /// A full bucket at `now` (seconds on a monotonic clock).
    init(_ limit: RateLimit, now: Double) {
        tokens = Double(limit.burst)
        updated = now
    }

    /// Adds what came back since the last look, up to the burst.
    mutating func refill(_ limit: RateLimit, now: Double) {
        tokens = min(Double(limit.burst), tokens + max(0, now - updated) * limit.perSecond)
        updated = now
    }

    /// Takes a token; `nil` when there was one, else the seconds until there will be.
    mutating func take(_ limit: RateLimit, now: Double) -> Double? {
        refill(limit, now: now)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return wait(limit)
    }

    /// The seconds until a token is there (0 when one is).
    func wait(_ limit: RateLimit) -> Double {
        tokens >= 1 ? 0 : (1 - tokens) / limit.perSecond
    }

    /// True when the bucket is full at `now`: forgetting it changes nothing.
    func isFull(_ limit: RateLimit, now: Double) -> Bool {
        tokens + max(0, now - updated) * limit.perSecond >= Double(limit.burst)
    }
}
