import ChildProcess
import Foundation

/// Runs a program to its end without holding a thread of Swift's cooperative pool: the blocking wait
/// for it happens on a thread of its own.
public enum ProgramRun {
    /// Runs `arguments` with exactly `environment` (`NAME=value` entries), its output appended to
    /// `outputPath`; answers its exit status.
    public static func run(_ arguments: [String], environment: [String], outputPath: String) async throws -> Int32 {
        let child = try ChildProcess.spawn(arguments, environment: environment, output: .file(outputPath))
        return await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: child.wait()) }.start()
        }
    }
}
