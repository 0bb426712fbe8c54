import Testing

@testable import HeraldClient

/// The stream's pong deadline, as the Apple transport uses it (the NIO transport's auto-ping closes a
/// connection the same way): a pong that does not come within the interval ends the heartbeat.
@Suite("Client heartbeat")
struct HeartbeatTests {
    @Test func aMissingPongEndsTheHeartbeatWithinItsInterval() async throws {
        let start = ContinuousClock.now
        await #expect(throws: HeraldClientError.timedOut) {
            try await Heartbeat.run(every: .milliseconds(100)) {
                // A half-open socket: the pong never comes.
                try await Task.sleep(for: .seconds(3_600))
            }
        }
        // One interval before the ping, one for its pong; far below the hour the ping waits.
        #expect(ContinuousClock.now - start < .seconds(30))
    }

    @Test func answeredPingsGoOnUntilCancelled() async throws {
        let pings = PingCounter()
        let heartbeat = Task {
            try await Heartbeat.run(every: .milliseconds(20)) { await pings.increment() }
        }
        try await waitUntilCount(pings, reaches: 5)
        heartbeat.cancel()
        await #expect(throws: CancellationError.self) { try await heartbeat.value }
    }

    private func waitUntilCount(_ pings: PingCounter, reaches count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while await pings.count < count {
            guard ContinuousClock.now < deadline else {
                Issue.record("only \(await pings.count) pings in 30 s")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

actor PingCounter {
    private(set) var count = 0

    func increment() {
        count += 1
    }
}
