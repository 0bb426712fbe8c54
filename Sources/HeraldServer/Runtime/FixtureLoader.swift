import Foundation
import HeraldCore
import HeraldStore
import Postgres

/// Loads channel and template definitions from the JSON files of a fixtures directory.
///
/// Every `*.json` file (in name order, subdirectories included) holds
/// `{"channels": [...], "templates": [...]}` in the same shapes as `PUT /v1/channels/{url}` and
/// `PUT /v1/templates/{key}` (plus `channel_url` / `key`). All files are read and validated first; then
/// everything is applied in one transaction, so any error leaves the database as it was.
public struct FixtureLoader: Sendable {
    /// One file's content.
    struct FixtureFile: Decodable {
        var channels: [Channel]?
        var templates: [Template]?
    }

    /// What loading did, one line per item.
    public struct Report: Sendable, Equatable {
        public struct Item: Sendable, Equatable {
            public var kind: String
            public var id: String
            public var outcome: String

            public init(kind: String, id: String, outcome: String) {
                self.kind = kind
                self.id = id
                self.outcome = outcome
            }
        }

        public var items: [Item] = []

        public var isUnchanged: Bool { items.allSatisfy { $0.outcome == "unchanged" } }
    }

    /// A fixture problem, naming the file and the JSON path.
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var file: String
        public var path: String
        public var message: String
        public var description: String { "\(file): \(path): \(message)" }
    }

    public let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Validates every file in `directory`, then applies them all in one transaction.
    public func load(directory: String) async throws -> Report {
        try await apply(try Self.read(directory: directory))
    }

    /// The same for files given by name and content (the console's upload): `.json` files only.
    public func load(files: [(name: String, data: Data)]) async throws -> Report {
        try await apply(try Self.read(files: files))
    }

    private func apply(_ definitions: Definitions) async throws -> Report {
        try await client.withTransaction { connection in
            var report = Report()
            for (file, path, channel) in definitions.channels {
                do {
                    let outcome = try await ChannelStore.put(channel, on: connection).outcome
                    report.items.append(.init(kind: "channel", id: channel.url, outcome: outcome.rawValue))
                } catch let change as ChannelStore.KindChange {
                    throw Problem(
                        file: file,
                        path: "\(path).kind",
                        message: "the channel exists as a \(change.existing.rawValue) channel; its kind cannot change"
                    )
                }
            }
            for (_, _, template) in definitions.templates {
                let stored = try await TemplateStore.put(template, on: connection)
                report.items.append(.init(kind: "template", id: "\(template.key) v\(stored.stored.version)", outcome: stored.outcome.rawValue))
            }
            return report
        }
    }

    struct Definitions {
        var channels: [(file: String, path: String, channel: Channel)] = []
        var templates: [(file: String, path: String, template: Template)] = []
    }

    /// Reads and validates every file; nothing touches the database.
    static func read(directory: String) throws -> Definitions {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw Problem(file: directory, path: "$", message: "no such directory")
        }
        let names = (manager.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? [])
            .filter { $0.hasSuffix(".json") }
        var files: [(name: String, data: Data)] = []
        for name in names {
            do {
                files.append((name, try Data(contentsOf: URL(fileURLWithPath: (directory as NSString).appendingPathComponent(name)))))
            } catch {
                throw Problem(file: name, path: "$", message: "cannot be read")
            }
        }
        return try read(files: files)
    }

    /// Reads and validates files given by content, in name order; nothing touches the database.
    static func read(files unsorted: [(name: String, data: Data)]) throws -> Definitions {
        let files = unsorted.filter { $0.name.hasSuffix(".json") }.sorted { $0.name < $1.name }
        var definitions = Definitions()
        var channelFiles: [String: String] = [:]
        var templateFiles: [String: String] = [:]
        for (file, data) in files {
            let content: FixtureFile
            do {
                content = try JSONDecoder().decode(FixtureFile.self, from: data)
                // As on the API, a misspelt field is refused rather than ignored.
                if let tree = StrictJSON.parse(data), let unknown = UnknownFields.first(in: tree, decoding: FixtureFile.self) {
                    throw Problem(
                        file: file,
                        path: unknown.path,
                        message: RequestBody.unknownField(unknown).message.dropFirst(unknown.path.count + 1).description
                    )
                }
            } catch let problem as Problem {
                throw problem
            } catch let error as DecodingError {
                let path = Self.path(of: error)
                throw Problem(file: file, path: path, message: RequestBody.describe(error).replacingOccurrences(of: path + " ", with: ""))
            } catch {
                throw Problem(file: file, path: "$", message: "cannot be read")
            }
            for (index, channel) in (content.channels ?? []).enumerated() {
                let path = "$.channels[\(index)]"
                if let problem = channel.problem() {
                    throw Problem(file: file, path: "\(path).\(problem.field)", message: problem.message)
                }
                if let other = channelFiles.updateValue(file, forKey: channel.url) {
                    throw Problem(file: file, path: "\(path).channel_url", message: "'\(channel.url)' is also defined in \(other)")
                }
                definitions.channels.append((file, path, channel))
            }
            for (index, template) in (content.templates ?? []).enumerated() {
                let path = "$.templates[\(index)]"
                do {
                    try template.validate()
                } catch {
                    throw Problem(file: file, path: path + error.path.dropFirst(), message: error.message)
                }
                if let other = templateFiles.updateValue(file, forKey: template.key) {
                    throw Problem(file: file, path: "\(path).key", message: "'\(template.key)' is also defined in \(other)")
                }
                definitions.templates.append((file, path, template))
            }
        }
        return definitions
    }

    static func path(of error: DecodingError) -> String {
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return JSONPath.string(context.codingPath)
        case .keyNotFound(let key, let context):
            return JSONPath.string(context.codingPath + [key])
        @unknown default:
            return "$"
        }
    }
}
