import Foundation
import HeraldCore

/// The admin bearer token for the embedded default, generated once and kept in the data directory.
enum AdminToken {
    /// Returns the token stored under `dataDirectory`, creating it (mode 0600) on first use.
    /// `created` tells the caller to show it once.
    static func loadOrCreate(dataDirectory: String) throws -> (token: String, path: String, created: Bool) {
        let path = (dataDirectory as NSString).appendingPathComponent("admin-token")
        if let existing = try? String(contentsOfFile: path, encoding: .utf8) {
            let token = existing.trimmingCharacters(in: .whitespacesAndNewlines)
            if !token.isEmpty { return (token, path, false) }
        }
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let token = SecureRandom.hexToken(byteCount: 32)
        guard FileManager.default.createFile(atPath: path, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ConfigurationError("cannot write the admin token to \(path)")
        }
        return (token, path, true)
    }
}
