import Foundation
import Synchronization

/// A `herald` executable started by a test, with its output read line by line.
public final class HeraldProcess: Sendable {
    public let process: Process
    private let lines: AsyncStream<String>
    private let output = PrintedLines()
    private let exit: AsyncStream<Int32>

    /// The `herald` binary built beside the test bundle.
    public static var executablePath: String {
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: bundle).deletingLastPathComponent()
        // Inside an .xctest bundle directory on some layouts; walk up until the products directory.
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("herald").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("herald").path
    }

    /// Starts `herald` with exactly `environment` (nothing inherited but `PATH` and `HOME`).
    public init(arguments: [String], environment: [String: String] = [:]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executablePath)
        process.arguments = arguments
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        env["HOME"] = ProcessInfo.processInfo.environment["HOME"]
        process.environment = env.merging(environment) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice

        let (lines, lineContinuation) = AsyncStream.makeStream(of: String.self)
        let (exit, exitContinuation) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { finished in
            exitContinuation.yield(finished.terminationStatus)
            exitContinuation.finish()
        }
        self.process = process
        self.lines = lines
        self.exit = exit
        try process.run()

        let reader = pipe.fileHandleForReading
        let output = self.output
        let thread = Thread {
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    output.append(line)
                    lineContinuation.yield(line)
                }
            }
            lineContinuation.finish()
        }
        thread.start()
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
        kill(process.processIdentifier, signal)
    }

    /// Waits for the process to exit and returns its status.
    public func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        try await withTimeout(timeout, what: "herald to exit") { [exit] in
            for await status in exit { return status }
            throw HeraldProcessError(message: "no exit status")
        }
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

public struct HeraldProcessError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
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

/// The lines a process printed, shared between its reader thread and the test.
private final class PrintedLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}
