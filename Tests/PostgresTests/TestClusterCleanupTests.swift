import Foundation
import HeraldTesting
import Postgres
import Testing

/// The test support's own cleanup: a throwaway cluster whose test process died without its `atexit`
/// (killed, or its output pipe closed under it) must not run on forever.
@Suite("Test cluster cleanup")
struct TestClusterCleanupTests {
    @Test func aClusterLeftByADeadTestProcessIsStoppedAndRemoved() async throws {
        // The process's own automatic sweep runs before its first shared cluster starts; have that
        // behind us, so that it cannot take the orphan below away between two of our checks.
        try await TestPostgres.withDatabase(migrated: false) { _ in }
        // A process id that is certainly gone: a child that has exited and been reaped.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        let directory = NSTemporaryDirectory() + "herald-test-orphan-\(child.processIdentifier)"
        let cluster = try PostgresCluster(directory: directory, durable: false)
        defer {
            try? cluster.stopBlocking(immediate: true)
            try? FileManager.default.removeItem(atPath: directory)
        }
        try await cluster.start()
        #expect(cluster.isRunning)
        // A cluster named for this (live) process is left alone.
        let own = try PostgresCluster(directory: NSTemporaryDirectory() + "herald-test-own-\(getpid())", durable: false)
        try FileManager.default.createDirectory(atPath: own.dataDirectory, withIntermediateDirectories: true)
        try Data("15\n".utf8).write(to: URL(fileURLWithPath: own.dataDirectory + "/PG_VERSION"))
        defer { try? FileManager.default.removeItem(atPath: own.directory) }

        try await TestPostgres.sweepOrphanedClusters()
        #expect(!cluster.isRunning)
        #expect(!FileManager.default.fileExists(atPath: directory))
        #expect(FileManager.default.fileExists(atPath: own.dataDirectory + "/PG_VERSION"))
    }
}
