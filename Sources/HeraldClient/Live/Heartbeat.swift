/// The stream's watch over its connection: a ping every interval, and a pong due before the next.
/// A socket can die without a word (a phone that changed networks, a NAT that forgot the mapping):
/// reads then wait forever, and only a missing pong tells.
enum Heartbeat {
    /// Pings every `interval` until cancelled; throws `HeraldClientError.timedOut` when a pong has not
    /// come within `interval` of its ping. `ping` sends one and returns when its pong arrives.
    static func run(every interval: Duration, ping: @escaping @Sendable () async throws -> Void) async throws {
        while true {
            try await Task.sleep(for: interval)
            try await HeraldClient.within(interval, orThrow: .timedOut, ping)
        }
    }
}
