import Foundation
import Logging
import Testing

@testable import HeraldServer

/// The files that keep the embedded default's secrets: private from the first byte, never replaced.
@Suite("Secret files")
struct SecretFileTests {
    func scratch() throws -> String {
        let directory = NSTemporaryDirectory() + "herald-secrets-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber).intValue
    }

    @Test func aNewSecretIsPrivateAndKeptFromThenOn() throws {
        let root = try scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        let first = try AdminToken.loadOrCreate(dataDirectory: data)
        #expect(first.created)
        #expect(first.token.count == 64)
        #expect(try mode(first.path) == 0o600)
        #expect(try mode(data) == (geteuid() == 0 ? 0o711 : 0o700))
        #expect(try FileManager.default.contentsOfDirectory(atPath: data) == ["admin-token"], "no temporary file left behind")
        let again = try AdminToken.loadOrCreate(dataDirectory: data)
        #expect(!again.created)
        #expect(again.token == first.token)
    }

    @Test func anExistingFileThatIsNotASecretStopsTheStartAndIsLeftAsItIs() throws {
        let data = try scratch()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let path = data + "/secret.key"
        try "not hex\n".write(toFile: path, atomically: false, encoding: .utf8)
        var configuration = HeraldConfiguration()
        configuration.dataDirectory = data
        #expect(throws: ConfigurationError.self) { try HeraldRuntime.resolveSecretKey(configuration, logger: Logger(label: "test")) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "not hex\n")
        // An empty admin token is refused the same way, not regenerated.
        try "".write(toFile: data + "/admin-token", atomically: false, encoding: .utf8)
        #expect(throws: ConfigurationError.self) { try AdminToken.loadOrCreate(dataDirectory: data) }
        #expect(try String(contentsOfFile: data + "/admin-token", encoding: .utf8) == "")
    }

    @Test func aSymbolicLinkOrADirectoryInTheSecretsPlaceIsRefused() throws {
        let data = try scratch()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let elsewhere = data + "/elsewhere"
        try String(repeating: "a", count: 64).write(toFile: elsewhere, atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: data + "/admin-token", withDestinationPath: elsewhere)
        #expect(throws: ConfigurationError.self) { try AdminToken.loadOrCreate(dataDirectory: data) }
        #expect(try String(contentsOfFile: elsewhere, encoding: .utf8) == String(repeating: "a", count: 64))

        try FileManager.default.createDirectory(atPath: data + "/secret.key", withIntermediateDirectories: false)
        var configuration = HeraldConfiguration()
        configuration.dataDirectory = data
        #expect(throws: ConfigurationError.self) { try HeraldRuntime.resolveSecretKey(configuration, logger: Logger(label: "test")) }
    }

    @Test func processesStartingTogetherAgreeOnOneSecret() async throws {
        let data = try scratch()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let results = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
            for _ in 0..<16 {
                group.addTask {
                    let stored = try SecretFile.loadOrCreate(data + "/shared", describing: "test secret", isValid: { $0.count == 64 }) {
                        String(repeating: "0", count: 48) + String(UUID().uuidString.prefix(16))
                    }
                    return (stored.secret, stored.created)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(results.map(\.0)).count == 1, "every caller got the same secret")
        #expect(results.filter(\.1).count == 1, "exactly one caller made it")
        #expect(try String(contentsOfFile: data + "/shared", encoding: .utf8) == results[0].0 + "\n")
    }
}
