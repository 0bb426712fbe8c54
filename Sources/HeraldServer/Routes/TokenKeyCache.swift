import HeraldStore
import Synchronization

/// The sync token key, read from the database once per process.
final class TokenKeyCache: Sendable {
    private let key = Mutex<[UInt8]?>(nil)

    func get(_ settings: SettingsStore) async throws -> [UInt8] {
        if let cached = key.withLock({ $0 }) { return cached }
        let loaded = try await settings.syncTokenKey()
        key.withLock { $0 = loaded }
        return loaded
    }
}
