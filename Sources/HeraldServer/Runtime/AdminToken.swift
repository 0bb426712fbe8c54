import Foundation
import HeraldCore

/// The admin bearer token for the embedded default, generated once and kept in the data directory.
enum AdminToken {
    /// Returns the token stored under `dataDirectory`, creating it (mode 0600, see `SecretFile`) on
    /// first use. `created` tells the caller to show it once.
    static func loadOrCreate(dataDirectory: String) throws -> (token: String, path: String, created: Bool) {
        let path = (dataDirectory as NSString).appendingPathComponent("admin-token")
        let stored = try SecretFile.loadOrCreate(path, describing: "admin token", isValid: { $0.count >= 32 }) {
            SecureRandom.hexToken(byteCount: 32)
        }
        return (stored.secret, path, stored.created)
    }
}
