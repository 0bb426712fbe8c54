import ChildProcess
import Foundation
import Logging
import NIOPosix
import Postgres

#if canImport(Glibc)
import Glibc
#endif

/// PgBouncer in transaction mode in front of a cluster: the suite's database tests run through it with
/// `HERALD_TEST_PGBOUNCER=on`, and `herald-bench sync --pgbouncer` measures polls through it.
///
/// It listens on a Unix socket in its own directory and reaches every database of the cluster by name.
/// PgBouncer 1.21 and later keep named prepared statements across server connections
/// (`max_prepared_statements`, set here); an older one (Debian 12 ships 1.18) cannot, and clients must
/// run their statements unnamed (`keepsPreparedStatements`).
public struct PgBouncer: Sendable {
    public let directory: String
    /// The port in its socket's name (`.s.PGSQL.<port>`); it opens no TCP port.
    public let port = 6432
    /// Whether named prepared statements work through it.
    public let keepsPreparedStatements: Bool
    let process: ChildProcess

    /// The binary: `HERALD_PGBOUNCER` when set (`scripts/build-pgbouncer` builds Debian's newer
    /// PgBouncer from its source package, one that keeps prepared statements), else Debian's package.
    public static let binary = ProcessInfo.processInfo.environment["HERALD_PGBOUNCER"] ?? "/usr/sbin/pgbouncer"

    /// Starts one in `directory` (created) in front of `cluster`, with at most `poolSize` server
    /// connections per database, and waits until it accepts connections.
    public static func start(in directory: String, before cluster: PostgresCluster, poolSize: Int = 20) async throws -> PgBouncer {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw HeraldProcessError(
                message: "PgBouncer is not installed (\(binary)); scripts/build-pgbouncer builds one, or apt-get install pgbouncer"
            )
        }
        let version = try await versionNumber()
        let keeps = version >= (1, 21)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var settings = [
            "[databases]",
            "* = host=\(cluster.socketDirectory) port=\(PostgresCluster.port)",
            "[pgbouncer]",
            "listen_addr =",
            "listen_port = 6432",
            "unix_socket_dir = \(directory)",
            "auth_type = trust",
            "auth_file = \(directory)/users.txt",
            "pool_mode = transaction",
            "default_pool_size = \(poolSize)",
            "max_client_conn = 2000",
            "server_reset_query =",
            "ignore_startup_parameters = extra_float_digits",
            "logfile = \(directory)/pgbouncer.log",
            "pidfile = \(directory)/pgbouncer.pid",
        ]
        if keeps { settings.append("max_prepared_statements = 1000") }
        try (settings.joined(separator: "\n") + "\n").write(toFile: directory + "/pgbouncer.ini", atomically: true, encoding: .utf8)
        try "\"\(PostgresCluster.superuser)\" \"\"\n".write(toFile: directory + "/users.txt", atomically: true, encoding: .utf8)
        var arguments = [binary]
        if let user = cluster.runAs {
            // PgBouncer refuses to run as root; it reaches the cluster's socket as the server's user.
            for name in ["", "/pgbouncer.ini", "/users.txt"] {
                try FileManager.default.setAttributes([.ownerAccountName: user], ofItemAtPath: directory + name)
            }
            arguments += ["-u", user]
        }
        arguments.append(directory + "/pgbouncer.ini")
        let process = try ChildProcess.spawn(arguments, environment: [], output: .file(directory + "/output.log"))
        let bouncer = PgBouncer(directory: directory, keepsPreparedStatements: keeps, process: process)
        // Quiet: until the socket is there, each attempt fails, and that is what is being waited for.
        var quiet = Logger(label: "herald.pgbouncer.probe")
        quiet.logLevel = .critical
        let probe = PostgresClient(
            configuration: .init(conninfo: bouncer.conninfo(database: "postgres"), maximumConnections: 1, preparedStatements: false),
            logger: quiet
        )
        defer { Task { await probe.shutdown() } }
        do {
            try await waitUntil("PgBouncer to accept connections", timeout: .seconds(20)) {
                (try? await probe.query("SELECT 1")) != nil
            }
        } catch {
            bouncer.stop()
            let log = (try? String(contentsOfFile: directory + "/pgbouncer.log", encoding: .utf8)) ?? ""
            throw HeraldProcessError(message: "PgBouncer did not start: \(log.suffix(2000))")
        }
        return bouncer
    }

    /// A libpq connection string for `database` through it.
    public func conninfo(database: String, user: String = PostgresCluster.superuser) -> String {
        "host=\(directory) port=\(port) dbname=\(database) user=\(user)"
    }

    /// Stops it (SIGINT: a fast shutdown, its connections closed) and waits for it. Blocks.
    public func stop() {
        kill(process.pid, SIGINT)
        _ = process.wait()
    }

    /// Stops the PgBouncer a killed test process left in `directory`, by its pid file. Blocks.
    static func stopOrphan(in directory: String) {
        guard let text = try? String(contentsOfFile: directory + "/pgbouncer.pid", encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0
        else { return }
        kill(pid, SIGINT)
    }

    /// The installed version, as (major, minor).
    static func versionNumber() async throws -> (Int, Int) {
        let output = NSTemporaryDirectory() + "herald-pgbouncer-version-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: output) }
        _ = try await NIOThreadPool.singleton.runIfActive { try ChildProcess.run([binary, "--version"], environment: [], outputPath: output) }
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        // "PgBouncer 1.18.0"
        let numbers = text.split(separator: "\n").first?.split(separator: " ").last?.split(separator: ".").compactMap { Int($0) } ?? []
        guard numbers.count >= 2 else { throw HeraldProcessError(message: "cannot read PgBouncer's version from '\(text)'") }
        return (numbers[0], numbers[1])
    }
}
