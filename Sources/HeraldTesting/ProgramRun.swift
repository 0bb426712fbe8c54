import ChildProcess
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs a program to its end without holding a thread of Swift's cooperative pool: the blocking wait
/// for it happens on a thread of its own.
public enum ProgramRun {
    /// Runs `arguments` with exactly `environment` (`NAME=value` entries), its output appended to
    /// `outputPath`; answers its exit status. A program still running after `timeout` is killed and
    /// the run fails: a test of a program that hangs fails, never waits for ever.
    public static func run(
        _ arguments: [String],
        environment: [String],
        outputPath: String,
        timeout: Duration = .seconds(900)
    ) async throws -> Int32 {
        let child = try ChildProcess.spawn(arguments, environment: environment, output: .file(outputPath))
        let killed = Mutex(false)
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            killed.withLock { $0 = true }
            kill(child.pid, SIGKILL)
        }
        let status = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: child.wait()) }.start()
        }
        watchdog.cancel()
        if killed.withLock({ $0 }) {
            let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw HeraldProcessError(
                message: "\(arguments.first ?? "the program") did not end within \(timeout) and was killed; its output ended:\n\(output.suffix(4000))"
            )
        }
        return status
    }
}
