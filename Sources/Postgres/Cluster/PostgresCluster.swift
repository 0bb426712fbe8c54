import ChildProcess
import Foundation
import NIOPosix

/// A private PostgreSQL cluster run with the system's `initdb` and `pg_ctl`.
///
/// This is both `herald serve`'s embedded default and the tests' throwaway database. The cluster
/// listens on a Unix socket only (`listen_addresses = ''`) in a directory readable by its owner alone,
/// so local `trust` authentication reaches nobody else. `initdb` refuses to run as root; when Herald is
/// root, the cluster runs as an unprivileged user (`postgres` when it exists, else `nobody`).
///
/// Layout under `directory`: `data/` (PGDATA), `run/` (the socket, unless the path would be too long
/// for a Unix socket, in which case a directory under `/tmp` derived from the path is used) and
/// `postgres.log`.
public struct PostgresCluster: Sendable {
    /// The superuser `initdb` creates. Herald's server connects as a role of its own that owns its
    /// database (see `HeraldStore`'s `EmbeddedDatabase`); tests connect as the superuser.
    public static let superuser = "herald"
    public static let port = 5432

    public let directory: String
    /// `false` turns off `fsync` and friends: for throwaway test clusters only.
    public let durable: Bool
    let binDirectory: String
    /// The unprivileged account to run the server as, when we are root (tools beside the server, such
    /// as a connection pooler, run as it too).
    public let runAs: String?
    /// More lines for the cluster's `herald.conf`, after Herald's own (a standby's replay delay, say).
    public var extraSettings: [String] = []

    public init(directory: String, durable: Bool = true) throws {
        self.directory = URL(fileURLWithPath: directory).standardizedFileURL.path
        self.durable = durable
        self.binDirectory = try Self.locateBinaries()
        self.runAs = geteuid() == 0 ? Self.unprivilegedUser() : nil
    }

    public var dataDirectory: String { directory + "/data" }
    public var logFile: String { directory + "/postgres.log" }

    public var socketDirectory: String {
        let preferred = directory + "/run"
        // sun_path holds 107 bytes; leave room for "/.s.PGSQL.5432".
        if preferred.utf8.count + 15 <= 100 { return preferred }
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in directory.utf8 {
            hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211
        }
        return "/tmp/herald-pg-\(String(hash, radix: 36))"
    }

    /// A libpq connection string for one of the cluster's databases, as `user` (the superuser unless
    /// given).
    public func conninfo(database: String = "postgres", user: String = superuser) -> String {
        "host='\(socketDirectory)' port=\(Self.port) user=\(user) dbname='\(database)'"
    }

    public var isInitialized: Bool {
        FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION")
    }

    /// True when a server is running on the data directory.
    public var isRunning: Bool {
        guard isInitialized else { return false }
        return (try? pgctl(["status", "-D", dataDirectory]).status) == 0
    }

    /// Creates the cluster on first use and starts it; a cluster already running is left as it is.
    /// Returns whether this call started the server. Blocks: call from a thread of your own, or use
    /// `start()`.
    @discardableResult
    public func startBlocking() throws -> Bool {
        try prepareDirectories()
        if !isInitialized { try initialize() }
        try writeSettings()
        if isRunning { return false }
        let outcome = try pgctl(["start", "-D", dataDirectory, "-l", logFile, "-w", "-t", "60"])
        guard outcome.status == 0 else {
            throw ClusterError(message: "pg_ctl start failed: \(outcome.output)\n\(logTail())")
        }
        return true
    }

    /// Stops the server. `fast` ends sessions and shuts down cleanly; `immediate` (for throwaway test
    /// clusters) skips the shutdown checkpoint. Blocks.
    public func stopBlocking(immediate: Bool = false) throws {
        guard isRunning else { return }
        let outcome = try pgctl(["stop", "-D", dataDirectory, "-m", immediate ? "immediate" : "fast", "-w", "-t", "60"])
        guard outcome.status == 0 else {
            throw ClusterError(message: "pg_ctl stop failed: \(outcome.output)")
        }
    }

    /// Restarts the server, dropping every connection. Blocks.
    public func restartBlocking() throws {
        let outcome = try pgctl(["restart", "-D", dataDirectory, "-l", logFile, "-m", "fast", "-w", "-t", "60"])
        guard outcome.status == 0 else {
            throw ClusterError(message: "pg_ctl restart failed: \(outcome.output)\n\(logTail())")
        }
    }

    /// Starts the server off the caller's thread; see `startBlocking()`.
    @discardableResult
    public func start() async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive { try startBlocking() }
    }

    public func stop() async throws {
        try await NIOThreadPool.singleton.runIfActive { try stopBlocking() }
    }

    public func restart() async throws {
        try await NIOThreadPool.singleton.runIfActive { try restartBlocking() }
    }

    // MARK: - Setup

    func prepareDirectories() throws {
        let manager = FileManager.default
        // Parents get the usual permissions (the server user must traverse them); only the cluster's
        // own directories are private.
        for path in [directory, socketDirectory] {
            try manager.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        }
        if !manager.fileExists(atPath: directory) {
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        }
        if let runAs { try changeOwner(directory, to: runAs) }
        try preparePrivateDirectory(socketDirectory)
        if let runAs {
            // The server user must be able to reach its directory through every parent.
            let probe = try run(["/usr/bin/test", "-w", directory], as: runAs)
            guard probe.status == 0 else {
                throw ClusterError(
                    message: """
                        the database directory \(directory) is not reachable by the unprivileged user '\(runAs)' \
                        that runs PostgreSQL (initdb refuses root); choose a data directory outside private \
                        home directories, e.g. --data-dir /var/lib/herald
                        """
                )
            }
        }
    }

    /// Creates the socket directory, or accepts the one there only if it is a real directory (not a
    /// symbolic link) that we or the server's user own and nobody else may enter. The fallback under
    /// `/tmp` has a name anyone can predict: another local user could have made it first, to read or
    /// replace the socket.
    private func preparePrivateDirectory(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw ClusterError(message: "cannot create the socket directory \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw ClusterError(message: "cannot inspect the socket directory \(path): \(String(cString: strerror(errno)))")
        }
        let refusal = "refusing the socket directory \(path):"
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw ClusterError(message: "\(refusal) it is not a directory (a symbolic link?); remove it and start again")
        }
        var owners: Set<uid_t> = [geteuid()]
        if let runAs, let account = getpwnam(runAs) { owners.insert(account.pointee.pw_uid) }
        guard owners.contains(info.st_uid) else {
            throw ClusterError(message: "\(refusal) it belongs to uid \(info.st_uid), not to this server; remove it and start again")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw ClusterError(
                message: "\(refusal) its mode is \(String(info.st_mode & 0o777, radix: 8)), others may enter it; it must be 0700"
            )
        }
        if let runAs { try changeOwner(path, to: runAs) }
    }

    private func initialize() throws {
        var arguments = [
            binDirectory + "/initdb", "-D", dataDirectory, "-U", Self.superuser,
            "--auth=trust", "--encoding=UTF8", "--no-locale",
        ]
        if !durable { arguments.append("--no-sync") }
        let outcome = try run(arguments, as: runAs)
        guard outcome.status == 0 else {
            throw ClusterError(message: "initdb failed: \(outcome.output)")
        }
        let config = try FileHandle(forWritingTo: URL(fileURLWithPath: dataDirectory + "/postgresql.conf"))
        defer { try? config.close() }
        try config.seekToEnd()
        try config.write(contentsOf: Data("\ninclude_if_exists = 'herald.conf'\n".utf8))
    }

    /// Herald's settings, rewritten at every start so that they follow the directory if it moves.
    private func writeSettings() throws {
        var lines = [
            "# Written by Herald at every start; edit postgresql.conf for your own settings.",
            "listen_addresses = ''",
            "port = \(Self.port)",
            "unix_socket_directories = '\(socketDirectory)'",
            "unix_socket_permissions = 0700",
            "max_connections = 200",
        ]
        if !durable {
            lines += ["fsync = off", "synchronous_commit = off", "full_page_writes = off"]
        }
        lines += extraSettings
        let path = dataDirectory + "/herald.conf"
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: false, encoding: .utf8)
        if let runAs { try changeOwner(path, to: runAs) }
    }

    func logTail() -> String {
        guard let log = try? String(contentsOfFile: logFile, encoding: .utf8) else { return "" }
        return log.split(separator: "\n").suffix(20).joined(separator: "\n")
    }

    // MARK: - Processes

    private func pgctl(_ arguments: [String]) throws -> ProcessOutcome {
        try run([binDirectory + "/pg_ctl"] + arguments, as: runAs)
    }

    struct ProcessOutcome {
        var status: Int32
        var output: String
    }

    /// Runs a command to completion, as `user` when given (through `runuser`).
    ///
    /// Output goes to a temporary file rather than a pipe, because `pg_ctl start` leaves a daemon
    /// behind and a pipe inherited by it would never report end-of-file.
    func run(_ command: [String], as user: String?) throws -> ProcessOutcome {
        var arguments = command
        if let user {
            arguments = ["/usr/sbin/runuser", "-u", user, "--"] + arguments
        }
        let outputPath = NSTemporaryDirectory() + "herald-pg-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        // A clean environment: inherited PG* variables (PGDATA, PGPORT, …) must not redirect the tools.
        let environment = ["PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL=C"]
        let status: Int32
        do {
            status = try ChildProcess.run(arguments, environment: environment, outputPath: outputPath)
        } catch {
            throw ClusterError(message: error.message)
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return ProcessOutcome(status: status, output: text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private func changeOwner(_ path: String, to user: String) throws {
        guard let account = getpwnam(user) else {
            throw ClusterError(message: "no such user: \(user)")
        }
        // lchown: a symbolic link put in the path's place must not hand its target to the user.
        guard lchown(path, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
            throw ClusterError(message: "cannot hand \(path) to \(user): errno \(errno)")
        }
    }

    // MARK: - Discovery

    /// Finds `initdb`/`pg_ctl`: `pg_config --bindir`, then the newest `/usr/lib/postgresql/*/bin`.
    static func locateBinaries() throws -> String {
        let manager = FileManager.default
        var candidates: [String] = []
        for pgConfig in ["/usr/bin/pg_config", "/usr/local/bin/pg_config"] where manager.isExecutableFile(atPath: pgConfig) {
            let outputPath = NSTemporaryDirectory() + "herald-pgconfig-\(UUID().uuidString).out"
            defer { try? manager.removeItem(atPath: outputPath) }
            if (try? ChildProcess.run([pgConfig, "--bindir"], environment: ["PATH=/usr/bin:/bin"], outputPath: outputPath)) == 0,
                let output = try? String(contentsOfFile: outputPath, encoding: .utf8)
            {
                candidates.append(output.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        let versions = (try? manager.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        candidates += versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin" }
        for candidate in candidates where manager.isExecutableFile(atPath: candidate + "/initdb") {
            return candidate
        }
        throw ClusterError(
            message: "PostgreSQL server binaries (initdb, pg_ctl) not found; install them with: apt-get install -y postgresql"
        )
    }

    static func unprivilegedUser() -> String {
        getpwnam("postgres") != nil ? "postgres" : "nobody"
    }
}

/// The embedded cluster could not be created, started or stopped.
public struct ClusterError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { message }
}
