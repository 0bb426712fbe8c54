import Foundation
import Testing

@testable import Postgres

/// The embedded cluster's socket directory: when the data directory's path is too long for a Unix
/// socket, the socket goes to a directory under `/tmp` whose name anyone can work out. Whatever is
/// there already is used only if it is a private directory of ours; nothing outside the cluster's
/// directories changes owner.
@Suite("Cluster socket directory")
struct ClusterSocketDirectoryTests {
    /// A cluster whose socket falls back to `/tmp`, and the two paths to remove afterwards.
    private func withFallbackCluster(_ body: (PostgresCluster) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "herald-socket-test-\(UUID().uuidString)-" + String(repeating: "d", count: 80)
        let cluster = try PostgresCluster(directory: directory, durable: false)
        defer {
            try? FileManager.default.removeItem(atPath: cluster.socketDirectory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        #expect(cluster.socketDirectory.hasPrefix("/tmp/herald-pg-"))
        try? FileManager.default.removeItem(atPath: cluster.socketDirectory)
        try body(cluster)
    }

    private func refusal(_ cluster: PostgresCluster) -> String? {
        do {
            try cluster.prepareDirectories()
            return nil
        } catch let error as ClusterError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    private func owner(_ path: String) throws -> (uid: uid_t, mode: mode_t, isDirectory: Bool) {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw ClusterError(message: "lstat \(path): errno \(errno)") }
        return (info.st_uid, info.st_mode & 0o777, info.st_mode & S_IFMT == S_IFDIR)
    }

    private var expectedOwner: uid_t {
        guard let runAs = geteuid() == 0 ? PostgresCluster.unprivilegedUser() : nil, let account = getpwnam(runAs) else { return geteuid() }
        return account.pointee.pw_uid
    }

    @Test func aMissingDirectoryIsCreatedPrivate() throws {
        try withFallbackCluster { cluster in
            #expect(refusal(cluster) == nil)
            let made = try owner(cluster.socketDirectory)
            #expect(made.isDirectory)
            #expect(made.mode == 0o700)
            #expect(made.uid == expectedOwner)
            // The next start accepts what this one made.
            #expect(refusal(cluster) == nil)
        }
    }

    @Test func aDirectoryOthersMayEnterIsRefused() throws {
        try withFallbackCluster { cluster in
            #expect(mkdir(cluster.socketDirectory, 0o700) == 0)
            #expect(chmod(cluster.socketDirectory, 0o755) == 0)
            let message = try #require(refusal(cluster))
            #expect(message.contains("refusing the socket directory \(cluster.socketDirectory)"))
            #expect(message.contains("must be 0700"))
            #expect(try owner(cluster.socketDirectory).mode == 0o755, "left as it was")
        }
    }

    @Test func aSymbolicLinkIsRefusedAndItsTargetKeepsItsOwner() throws {
        try withFallbackCluster { cluster in
            let target = NSTemporaryDirectory() + "herald-socket-target-\(UUID().uuidString)"
            #expect(mkdir(target, 0o700) == 0)
            defer { try? FileManager.default.removeItem(atPath: target) }
            #expect(symlink(target, cluster.socketDirectory) == 0)
            let before = try owner(target)
            let message = try #require(refusal(cluster))
            #expect(message.contains("not a directory"))
            #expect(try owner(target).uid == before.uid)
        }
    }

    @Test(.enabled(if: geteuid() == 0, "only root can make a directory another user owns"))
    func aDirectoryOwnedBySomeoneElseIsRefused() throws {
        try withFallbackCluster { cluster in
            #expect(mkdir(cluster.socketDirectory, 0o700) == 0)
            // An account that is neither us nor the server's user.
            let stranger = try #require(
                ["nobody", "daemon", "bin"].compactMap { (name: String) in getpwnam(name)?.pointee.pw_uid }.first { $0 != expectedOwner }
            )
            #expect(chown(cluster.socketDirectory, stranger, 0) == 0)
            let message = try #require(refusal(cluster))
            #expect(message.contains("belongs to uid \(stranger)"))
            #expect(try owner(cluster.socketDirectory).uid == stranger, "left as it was")
        }
    }
}
