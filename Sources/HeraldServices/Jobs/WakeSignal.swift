import Postgres
import Synchronization

/// Wakes a background service early: `signal()` ends the current `wait`, or the next one when nobody
/// is waiting (signals coalesce). One waiter at a time.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    public init() {}

    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns after a signal, after `timeout`, or when the task is cancelled, whichever comes first.
    public func wait(timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForSignal() }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    // Checked under the lock, so a cancellation either is seen here or finds the waiter.
                    if Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}

extension WakeSignal {
    /// Signals on every event of `listener` (each notification, each reconnect) until the task is
    /// cancelled: how a dispatcher hears of work another process queued.
    func signal(onEventsOf listener: PostgresListener) async {
        await Self.signal([self], onEventsOf: listener)
    }

    /// Signals every one of `signals` on each event of `listener` (a dispatcher with several lanes).
    static func signal(_ signals: [WakeSignal], onEventsOf listener: PostgresListener) async {
        for await _ in listener.events() {
            for wake in signals { wake.signal() }
            if Task.isCancelled { break }
        }
    }
}
