import Foundation
import HeraldCore

/// One migration file from `sql/`: its name (the file name without `.sql`), text and checksum.
public struct Migration: Sendable, Equatable {
    public let name: String
    public let sql: String
    /// SHA-256 of the file's text, hex-encoded; an applied migration whose file changes is refused.
    public let checksum: String

    /// Earlier checksums of this file that are still accepted: the file's comments were reworded after
    /// it shipped (see `rewordedComments`), and databases that applied it keep the old checksum.
    public let earlierChecksums: Set<String>

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hexDigest(sql)
        self.earlierChecksums = Self.rewordedComments[name] ?? []
    }

    /// Whether `recorded`, the checksum a database applied this migration with, matches the file.
    public func accepts(checksum recorded: String) -> Bool {
        recorded == checksum || earlierChecksums.contains(recorded)
    }

    /// Migrations whose comments, and nothing else, changed after they shipped, with the checksums
    /// they had before. Statements never change this way: a change to what a migration does is a new
    /// migration. `MigratorTests` rebuilds each earlier text from the current one and checks that
    /// these are its checksums.
    static let rewordedComments: [String: Set<String>] = [
        // A comment cited a design note outside the repository; it now points at docs/scaling.md.
        "0005_notifications": ["e950e91bbb9ac41df34c4d3f57503610e3410caaf361e4914a0ade84114f646b"],
        // Likewise for its first line.
        "0014_channel_list_changes": ["30ab0cbb040a89e463b96155f25d9f94bff9acb9ac2c92b52841267ec3b952d0"],
    ]

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
