import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization

@testable import HeraldClient

/// A platform the test drives: it sends the app's and the network's events by hand and records the
/// badges set and the background time asked for.
@MainActor
final class TestPlatform: HeraldPlatform {
    var isActive: Bool
    private var handler: (@MainActor @Sendable (PlatformEvent) -> Void)?
    private(set) var starts = 0
    private(set) var stops = 0
    private(set) var badges: [Int] = []
    /// Background tasks asked for and not yet ended.
    private(set) var backgroundTasksOpen = 0
    private(set) var backgroundTasksAsked = 0

    init(active: Bool = false) {
        isActive = active
    }

    /// Whether a client is listening.
    var isObserved: Bool { handler != nil }

    func start(_ handler: @escaping @MainActor @Sendable (PlatformEvent) -> Void) {
        starts += 1
        self.handler = handler
    }

    func stop() {
        stops += 1
        handler = nil
    }

    func setBadge(_ count: Int) {
        badges.append(count)
    }

    func withBackgroundTime(_ name: String, _ work: @escaping @MainActor () async -> Void) {
        backgroundTasksAsked += 1
        backgroundTasksOpen += 1
        Task {
            await work()
            self.backgroundTasksOpen -= 1
        }
    }

    /// Sends `event` as the system would.
    func send(_ event: PlatformEvent) {
        switch event {
        case .didBecomeActive: isActive = true
        case .didEnterBackground: isActive = false
        case .network: break
        }
        handler?(event)
    }
}

/// Watches the client's requests below its session middleware: how many are in flight at most, which
/// operations were asked, and holds the operations the test names until it lets them go.
final class RequestWatch: ClientMiddleware, Sendable {
    private struct State {
        var inFlight = 0
        var most = 0
        var operations: [String] = []
        var held: Set<String> = []
        var waiting: [(operation: String, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// The most requests that were in flight at once.
    var mostInFlight: Int { state.withLock { $0.most } }
    /// Every operation asked, in order.
    var operations: [String] { state.withLock { $0.operations } }
    /// Requests waiting at the gate.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    func count(_ operation: String) -> Int {
        operations.filter { $0 == operation }.count
    }

    /// From now on, requests of `operation` wait until `release(_:)`.
    func hold(_ operation: String) {
        state.withLock { _ = $0.held.insert(operation) }
    }

    /// Lets the held requests of `operation` go, and the later ones pass.
    func release(_ operation: String) {
        let resumed = state.withLock { state in
            state.held.remove(operation)
            let going = state.waiting.filter { $0.operation == operation }
            state.waiting.removeAll { $0.operation == operation }
            return going
        }
        for waiter in resumed { waiter.continuation.resume() }
    }

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.withLock { state in
                if state.held.contains(operationID) {
                    state.waiting.append((operationID, continuation))
                    return true
                }
                return false
            }
            if !wait { continuation.resume() }
        }
        state.withLock { state in
            state.inFlight += 1
            state.most = max(state.most, state.inFlight)
            state.operations.append(operationID)
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        return try await next(request, body, baseURL)
    }
}

/// The client's log, kept for the test to read.
final class LogRecorder: Sendable {
    private let lines = Mutex<[(level: HeraldLogLevel, message: String, at: ContinuousClock.Instant)]>([])

    var handler: HeraldLogHandler {
        { [self] level, message in self.lines.withLock { $0.append((level, message, .now)) } }
    }

    var entries: [(level: HeraldLogLevel, message: String, at: ContinuousClock.Instant)] { lines.withLock { $0 } }

    func contains(_ level: HeraldLogLevel, _ text: String) -> Bool {
        entries.contains { $0.level == level && $0.message.contains(text) }
    }
}
