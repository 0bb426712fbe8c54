import ChildProcess
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A `herald` executable started by a test, with its output read line by line.
///
/// Started through `ChildProcess` and reaped on a thread of its own.
public final class HeraldProcess: Sendable {
    public let pid: pid_t
    private let lines: AsyncStream<String>
    private let exit: AsyncStream<Int32>
    /// Finishes when the reader has seen end-of-file, i.e. `printed` holds everything.
    private let outputDrained: AsyncStream<Void>
    private let output = PrintedLines()

    /// The `herald` binary: `HERALD_BINARY` when set; else the one built beside the test bundle (or
    /// beside the running program); else, for the benchmarks' package, the main package's build of the
    /// same configuration under the working directory (`.build/release/herald` for a release build).
    public static var executablePath: String {
        if let path = ProcessInfo.processInfo.environment["HERALD_BINARY"], !path.isEmpty { return path }
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let beside = URL(fileURLWithPath: bundle).deletingLastPathComponent()
        var directory = beside
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("herald").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        let configuration = beside.lastPathComponent
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            .appendingPathComponent(".build").appendingPathComponent(configuration).appendingPathComponent("herald").path
    }

    /// Starts `herald` with exactly `environment` (nothing inherited but `PATH` and `HOME`), under
    /// `launcher` when given (a profiler such as `heaptrack -o FILE`; then `pid` is the launcher's).
    public init(arguments: [String], environment: [String: String] = [:], launcher: [String] = []) throws {
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        env["HOME"] = ProcessInfo.processInfo.environment["HOME"]
        env.merge(environment) { $1 }

        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw HeraldProcessError(message: "pipe failed: errno \(errno)") }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])

        let child: ChildProcess
        do {
            child = try ChildProcess.spawn(
                launcher + [Self.executablePath] + arguments,
                environment: env.map { "\($0.key)=\($0.value)" },
                output: .descriptor(writeEnd)
            )
        } catch {
            close(writeEnd)
            close(readEnd)
            throw HeraldProcessError(message: error.message)
        }
        // Only the child writes now; our copy must go so the reader sees end-of-file when it exits.
        close(writeEnd)
        self.pid = child.pid

        let (lines, lineContinuation) = AsyncStream.makeStream(of: String.self)
        let (exit, exitContinuation) = AsyncStream.makeStream(of: Int32.self)
        let (outputDrained, drainedContinuation) = AsyncStream.makeStream(of: Void.self)
        self.lines = lines
        self.exit = exit
        self.outputDrained = outputDrained

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
            drainedContinuation.finish()
        }.start()
        Thread {
            exitContinuation.yield(child.wait())
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

    /// Waits for the process to exit and for its output to be read to the end; returns its exit status.
    public func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        try await withTimeout(timeout, what: "herald to exit") { [exit, outputDrained] in
            for await _ in outputDrained {}
            for await status in exit { return status }
            throw HeraldProcessError(message: "no exit status")
        }
    }
}

public struct HeraldProcessError: Error, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
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
///
/// Past the deadline the body is cancelled and not waited for. Not a task group: a group waits for
/// all its children, so a body that ignores cancellation (a continuation that only what it waits for
/// resumes) would turn the guard into the hang it is there to catch.
public func withTimeout<R: Sendable>(
    _ timeout: Duration,
    what: String,
    _ body: @escaping @Sendable () async throws -> R
) async throws -> R {
    let first = FirstResult<R>()
    let work = Task {
        do {
            first.finish(.success(try await body()))
        } catch {
            first.finish(.failure(error))
        }
    }
    let timer = Task {
        try await Task.sleep(for: timeout)
        work.cancel()
        first.finish(.failure(HeraldProcessError(message: "timed out after \(timeout) waiting for \(what)")))
    }
    defer { timer.cancel() }
    return try await withTaskCancellationHandler {
        try await first.value()
    } onCancel: {
        work.cancel()
    }
}

/// The first of several outcomes offered, handed to the one waiter; later ones are dropped.
private final class FirstResult<R: Sendable>: Sendable {
    private struct State {
        var result: Result<R, any Error>?
        var waiter: CheckedContinuation<R, any Error>?
    }
    private let state = Mutex(State())

    func finish(_ result: Result<R, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<R, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    func value() async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<R, any Error>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}
