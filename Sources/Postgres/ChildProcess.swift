import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs a program to completion with `posix_spawn` and `waitpid`. Blocks the calling thread.
enum ChildProcess {
    /// Runs `arguments[0]` with the rest as arguments, standard input from `/dev/null` and standard
    /// output and error appended to `outputPath`. Returns the exit status (128 + signal if killed).
    static func run(_ arguments: [String], environment: [String], outputPath: String) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw ClusterError(message: "cannot run \(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else {
                throw ClusterError(message: "waitpid failed for \(arguments[0]): errno \(errno)")
            }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros; spelled out here.
        if status & 0x7F == 0 { return (status >> 8) & 0xFF }
        return 128 + (status & 0x7F)
    }
}
