import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A `herald` executable started by a test, with its output read line by line.
///
/// Spawned with `posix_spawn` and reaped by `waitpid` on a thread of its own (Foundation's `Process`
/// can miss child exits when several children run at once).
public final class HeraldProcess: Sendable {
    public let pid: pid_t
    private let lines: AsyncStream<String>
    private let exit: AsyncStream<Int32>
    private let output = PrintedLines()

    /// The `herald` binary built beside the test bundle.
    public static var executablePath: String {
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: bundle).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("herald").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("herald").path
    }

    /// Starts `herald` with exactly `environment` (nothing inherited but `PATH` and `HOME`).
    public init(arguments: [String], environment: [String: String] = [:]) throws {
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        env["HOME"] = ProcessInfo.processInfo.environment["HOME"]
        env.merge(environment) { $1 }

        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw HeraldProcessError(message: "pipe failed: errno \(errno)") }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)
        posix_spawn_file_actions_addclose(&actions, readEnd)
        posix_spawn_file_actions_addclose(&actions, writeEnd)

        let path = Self.executablePath
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        close(writeEnd)
        guard spawned == 0 else {
            close(readEnd)
            throw HeraldProcessError(message: "cannot start \(path): \(String(cString: strerror(spawned)))")
        }
        self.pid = pid

        let (lines, lineContinuation) = AsyncStream.makeStream(of: String.self)
        let (exit, exitContinuation) = AsyncStream.makeStream(of: Int32.self)
        self.lines = lines
        self.exit = exit

        let output = self.output
        Thread {
            var pending: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                pending.append(contentsOf: chunk[0..<count])
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    output.append(line)
                    lineContinuation.yield(line)
                }
            }
            close(readEnd)
            lineContinuation.finish()
        }.start()
        let child = pid
        Thread {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            // Exit code when it exited, 128 + signal when a signal killed it.
            exitContinuation.yield(status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F))
            exitContinuation.finish()
        }.start()
    }

    /// Everything the process printed so far (stdout and stderr interleaved).
    public var printed: [String] { output.all }

    /// Waits for the first line containing `marker` and returns it; fails if the process ends first.
    public func waitForLine(containing marker: String, timeout: Duration = .seconds(120)) async throws -> String {
        try await withTimeout(timeout, what: "a line containing '\(marker)'") { [lines] in
            for await line in lines where line.contains(marker) {
                return line
            }
            throw HeraldProcessError(message: "herald exited before printing '\(marker)'")
        }
    }

    /// Sends a signal (e.g. `SIGTERM`).
    public func signal(_ signal: Int32) {
        kill(pid, signal)
    }

    /// Waits for the process to exit and returns its exit status.
    public func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        try await withTimeout(timeout, what: "herald to exit") { [exit] in
            for await status in exit { return status }
            throw HeraldProcessError(message: "no exit status")
        }
    }
}

public struct HeraldProcessError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The lines a process printed, shared between its reader thread and the test.
private final class PrintedLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// Runs `body`, failing with a clear error if it takes longer than `timeout`. A guard against hangs,
/// not a way to wait for something.
public func withTimeout<R: Sendable>(
    _ timeout: Duration,
    what: String,
    _ body: @escaping @Sendable () async throws -> R
) async throws -> R {
    try await withThrowingTaskGroup(of: R.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw HeraldProcessError(message: "timed out after \(timeout) waiting for \(what)")
        }
        guard let first = try await group.next() else { throw CancellationError() }
        group.cancelAll()
        return first
    }
}
