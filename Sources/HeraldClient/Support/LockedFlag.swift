import Foundation

/// A flag set once, read from any thread (`Synchronization.Mutex` needs iOS 18).
final class LockedFlag: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var value = false

    var isSet: Bool {
        lock.withLock { value }
    }

    func set() {
        lock.withLock { value = true }
    }
}
