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
        // A comment cited a design note outside the repository; it now points at docs/scaling.md. Then
        // its measured figure moved to docs/decisions/ (as in the four below).
        "0005_notifications": [
            "e950e91bbb9ac41df34c4d3f57503610e3410caaf361e4914a0ade84114f646b",
            "e8ed0d3319c967ac40c9f39e3a14cce3d5a70a65bfb9c009d4cee616dc7adfc7",
        ],
        "0006_collections": ["d4cccc18644287267a7f7a58e3199c8636796c77ae7a941675291986f4310e6c"],
        "0012_broadcast_folding": ["2665f524ba7bf460ce4caa50794dbfa74fe3552e612bdde26ab32af772f68135"],
        "0013_user_channels": ["f3b87dccce59f8b87d699a6faf8a4089891cf1e1b9eafcd72fe8ef93b21e409b"],
        // Its first line cited a design note outside the repository.
        "0014_channel_list_changes": ["30ab0cbb040a89e463b96155f25d9f94bff9acb9ac2c92b52841267ec3b952d0"],
        "0015_uncounted_notifications": ["06f365a7202063564fbcc904df99eb28be3d518a59c326a53ee6502789ed0210"],
        "0021_user_channels_among": ["6e8d2044cea04c7e3a639fb2f7d73cc745094dadafaf8e1aa090f2cf8a43237f"],
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
