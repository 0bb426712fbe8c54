import CChildProcess

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts programs with `posix_spawn` and reaps them with `waitpid`.
///
/// Foundation's `Process` is avoided on purpose: it waits for children through a SIGCHLD dispatch
/// source that can miss exits when several children run at once, and its children inherit the signal
/// mask of whichever runtime thread started them (Swift's and Dispatch's threads block signals), so a
/// child relying on `SIGALRM` or `SIGTERM` would never see them. Here every child starts with an empty
/// signal mask and default handlers.
public struct ChildProcess: Sendable {
    public let pid: pid_t

    /// What the child's standard output and error are connected to.
    public enum Output: Sendable {
        /// Appended to this file (created if missing, mode 0600).
        case file(String)
        /// The write end of a pipe; the caller keeps (and later closes) the read end.
        case descriptor(Int32)
    }

    /// Starts `arguments[0]` (an absolute path) with the remaining arguments, exactly `environment`
    /// (`NAME=value` strings), standard input from `/dev/null` and standard output and error to `output`.
    public static func spawn(_ arguments: [String], environment: [String], output: Output) throws(ChildProcessError) -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        switch output {
        case .file(let path):
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        case .descriptor(let descriptor):
            posix_spawn_file_actions_adddup2(&actions, descriptor, 1)
        }
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else crosses over. Sockets NIO accepts are not close-on-exec (it calls accept4 with
        // SOCK_NONBLOCK alone), so a child started while one is open — a PostgreSQL server the test
        // support starts for the length of a test — would keep a copy, and the connection would stay
        // open after the server closed it, for as long as that child lives.
        #if canImport(Glibc)
        let closing = herald_spawn_file_actions_addclosefrom(&actions, 3)
        // ENOSYS: a C library before glibc 2.34 has no such action; the child inherits as before.
        guard closing == 0 || closing == ENOSYS else {
            throw ChildProcessError(message: "cannot keep descriptors from \(arguments[0]): \(String(cString: strerror(closing)))")
        }
        #endif

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        #if canImport(Darwin)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_CLOEXEC_DEFAULT))
        #else
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        #endif

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw ChildProcessError(message: "cannot run \(arguments[0]): \(String(cString: strerror(status)))")
        }
        return ChildProcess(pid: pid)
    }

    /// Blocks the calling thread until the child exits; returns its exit status, or 128 + the signal
    /// number when a signal ended it.
    public func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros, spelled out here.
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// Runs a program to completion (see `spawn`), with its output appended to `outputPath`.
    /// Blocks the calling thread.
    public static func run(_ arguments: [String], environment: [String], outputPath: String) throws(ChildProcessError) -> Int32 {
        try spawn(arguments, environment: environment, output: .file(outputPath)).wait()
    }
}

/// A program could not be started.
public struct ChildProcessError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
