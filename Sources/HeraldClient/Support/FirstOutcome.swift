import Foundation

/// The first of several outcomes racing for one waiter (`HeraldClient.within`): the work's, the
/// deadline's, a cancellation's. Later ones are dropped.
final class FirstOutcome<T: Sendable>: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?
    private var early: Result<T, any Error>?
    private var done = false

    /// Sets the waiter; an outcome that came before it resumes it at once.
    func wait(_ continuation: CheckedContinuation<T, any Error>) {
        let ready: Result<T, any Error>? = lock.withLock {
            if let early {
                self.early = nil
                return early
            }
            self.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    /// Resumes the waiter with `result`, if nothing did before.
    func finish(_ result: Result<T, any Error>) {
        let waiting: CheckedContinuation<T, any Error>? = lock.withLock {
            guard !done else { return nil }
            done = true
            guard let continuation else {
                early = result
                return nil
            }
            self.continuation = nil
            return continuation
        }
        waiting?.resume(with: result)
    }
}
