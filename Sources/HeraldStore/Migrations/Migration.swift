import Foundation
import HeraldCore

/// One migration file from `sql/`: its name (the file name without `.sql`), text and checksum.
public struct Migration: Sendable, Equatable {
    public let name: String
    public let sql: String
    /// SHA-256 of the file's text, hex-encoded; an applied migration whose file changes is refused.
    public let checksum: String

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hexDigest(sql)
    }

    /// Loads every `*.sql` file in `directory`, ordered by file name (so `0002_…` runs after `0001_…`).
    public static func load(from directory: String) throws -> [Migration] {
        let files: [String]
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw MigrationError.unreadableDirectory(directory)
        }
        return try files.filter { $0.hasSuffix(".sql") }.sorted().map { file in
            let path = (directory as NSString).appendingPathComponent(file)
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw MigrationError.unreadableDirectory(path)
            }
            return Migration(name: String(file.dropLast(4)), sql: text)
        }
    }
}
