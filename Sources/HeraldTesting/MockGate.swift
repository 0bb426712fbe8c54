import NIOConcurrencyHelpers

/// Holds a mock service's requests while closed — a service that has stalled — and lets them all go
/// when opened. Open unless told otherwise.
public final class MockGate: Sendable {
    private struct State {
        var isOpen = true
        var held: [CheckedContinuation<Void, Never>] = []
        var arrived = 0
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    /// From now on, requests wait at the gate.
    public func close() {
        state.withLockedValue { $0.isOpen = false }
    }

    /// Lets every waiting request go, and those after it.
    public func open() {
        let held = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.held = [] }
            return state.held
        }
        for request in held { request.resume() }
    }

    /// How many requests reached the gate while it was closed.
    public var arrivedWhileClosed: Int { state.withLockedValue { $0.arrived } }

    /// Returns at once while open; else when opened.
    func pass() async {
        await withCheckedContinuation { continuation in
            let wait = state.withLockedValue { state -> Bool in
                guard !state.isOpen else { return false }
                state.arrived += 1
                state.held.append(continuation)
                return true
            }
            if !wait { continuation.resume() }
        }
    }
}
