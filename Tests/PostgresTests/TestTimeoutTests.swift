import Foundation
import HeraldTesting
import Synchronization
import Testing

/// The test support's guards against hangs: a wait that never ends must fail its test, never hold up
/// the whole run, even when what it waits on ignores cancellation.
@Suite("Test timeouts")
struct TestTimeoutTests {
    /// A continuation only its own resumption ends, as a mock's `waitForRequests` is.
    final class Parked: Sendable {
        private let continuation = Mutex<CheckedContinuation<Void, Never>?>(nil)

        func park() async {
            await withCheckedContinuation { continuation in self.continuation.withLock { $0 = continuation } }
        }

        var isParked: Bool { continuation.withLock { $0 != nil } }

        func release() {
            continuation.withLock {
                $0?.resume()
                $0 = nil
            }
        }
    }

    @Test func aBodyThatIgnoresCancellationStillFailsAtTheDeadline() async throws {
        let parked = Parked()
        let error = await #expect(throws: HeraldProcessError.self) {
            try await withTimeout(.milliseconds(200), what: "a parked body") { await parked.park() }
        }
        #expect(error?.message == "timed out after 0.2 seconds waiting for a parked body")
        // The body is still parked (it was not waited for); let it go so that nothing is left behind.
        try await waitUntil("the body to park") { parked.isParked }
        parked.release()
    }

    @Test func aBodyAnswersOrThrowsAsItself() async throws {
        #expect(try await withTimeout(.seconds(30), what: "an answer") { 42 } == 42)
        await #expect(throws: CancellationError.self) {
            try await withTimeout(.seconds(30), what: "an error") { throw CancellationError() }
        }
    }

    @Test func aProgramThatDoesNotEndIsKilledAndFails() async throws {
        let output = NSTemporaryDirectory() + "herald-program-run-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let error = await #expect(throws: HeraldProcessError.self) {
            try await ProgramRun.run(["/bin/sh", "-c", "echo started; exec sleep 600"], environment: [], outputPath: output, timeout: .seconds(3))
        }
        #expect(error?.message.contains("did not end within 3.0 seconds and was killed") == true)
        #expect(error?.message.hasSuffix("started\n") == true)
        #expect(try await ProgramRun.run(["/bin/sh", "-c", "exit 3"], environment: [], outputPath: output) == 3)
    }
}
