import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Postgres
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The `export` case: users with growing numbers of copies, each exported through
/// `GET /v1/users/{id}/export` from a `herald serve` process whose resident memory is sampled while
/// the document streams. A streamed export holds a page of rows and a chunk of text whatever the
/// user's size, so the growth should not follow the document's size.
struct ExportBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export users with many copies; the server's memory while the document streams."
    )

    @Option(help: "Comma-separated copy counts: one user with each, exported in this order.")
    var copies: String = "10000,100000,1000000"

    @Option(help: "PostgreSQL URI or conninfo; default: a private cluster in a temporary directory.")
    var databaseURL: String?

    static let adminToken = "herald-bench-admin-token-0123456789"

    func run() async throws {
        let sizes = copies.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 >= 100 }) else { throw ValidationError("every --copies entry must be at least 100") }
        let database = try await BenchDatabase.open(databaseURL: databaseURL)
        defer { database.close() }
        try await database.withFreshHeraldDatabase("herald_export_bench", connections: 4) { client, http, conninfo, _ in
            try await seed(client, sizes: sizes)
            let serve = try await ServeProcess.start(conninfo: conninfo, adminToken: Self.adminToken)
            defer { serve.process.signal(SIGKILL) }
            print("")
            print("| copies | events | document MB | seconds | MB/s | herald RSS before | peak while streaming | growth |")
            print("|---:|---:|---:|---:|---:|---:|---:|---:|")
            for (index, size) in sizes.enumerated() {
                let result = try await export(http: http, port: serve.port, pid: serve.process.pid, user: "user-\(index + 1)")
                let events = Self.events(copies: size)
                guard result.notificationIDs == size + events else {
                    throw ValidationError(
                        "user-\(index + 1): \(result.notificationIDs) objects name a notification, expected \(size) copies + \(events) events"
                    )
                }
                let megabytes = Double(result.bytes) / 1_048_576
                print(
                    "| \(size) | \(events) | \(format(megabytes, digits: 1)) | \(format(result.seconds, digits: 1)) | "
                        + "\(format(megabytes / result.seconds, digits: 1)) | \(format(Double(result.before) / 1024, digits: 1)) MB | "
                        + "\(format(Double(result.peak) / 1024, digits: 1)) MB | \(format(Double(result.peak - result.before) / 1024, digits: 1)) MB |"
                )
            }
        }
    }

    /// A view for every tenth copy and a click for every hundredth.
    static func events(copies: Int) -> Int { copies / 10 + copies / 100 }

    /// One user per size, `user-1`…, each with that many copies of their own notifications (a title, a
    /// sentence and a link), the events above and a channel state, written in bulk.
    private func seed(_ client: PostgresClient, sizes: [Int]) async throws {
        print("Creating \(sizes.count) users with \(sizes.map(String.init).joined(separator: ", ")) copies…")
        try await BenchSeed.feedAndPlainTemplate(client)
        for (index, size) in sizes.enumerated() {
            let user = "user-\(index + 1)"
            try await client.withTransaction { connection in
                let xid = try await connection.query("SELECT pg_current_xact_id()::text::bigint").first!.decode(Int64.self)
                let key = try await connection.query("INSERT INTO users (id) VALUES (\(user)) RETURNING key").first!.decode(Int64.self)
                try await connection.query(
                    """
                    WITH sent AS (
                        \(BenchSeed.notificationsInsert(count: size))
                        RETURNING id
                    )
                    INSERT INTO notification_recipients (user_key, channel_key, notification_id, change_xid)
                    SELECT \(key), 1, id, \(xid) FROM sent
                    """
                )
                try await connection.query(
                    """
                    INSERT INTO notification_events (notification_id, kind, user_key)
                    SELECT notification_id, 1, user_key FROM (
                        SELECT notification_id, user_key, row_number() OVER (ORDER BY notification_id) AS n
                        FROM notification_recipients WHERE user_key = \(key)
                    ) AS numbered WHERE n % 10 = 0
                    UNION ALL
                    SELECT notification_id, 2, user_key FROM (
                        SELECT notification_id, user_key, row_number() OVER (ORDER BY notification_id) AS n
                        FROM notification_recipients WHERE user_key = \(key)
                    ) AS numbered WHERE n % 100 = 0
                    """
                )
                try await connection.query(
                    """
                    INSERT INTO channel_states (user_key, channel_key, unread_adjustment, last_notification_id)
                    SELECT \(key), 1, \(size), max(notification_id) FROM notification_recipients WHERE user_key = \(key)
                    """
                )
            }
        }
        try await client.query("VACUUM ANALYZE")
    }

    struct Result {
        var bytes = 0
        /// Occurrences of `"notification_id"`: one per copy and one per event.
        var notificationIDs = 0
        var seconds = 0.0
        /// Resident kB of the server before the request, and the most seen while it streamed.
        var before = 0
        var peak = 0
    }

    /// Streams one export, counting what arrives, while another task samples the server's memory.
    private func export(http: HTTPClient, port: Int, pid: pid_t, user: String) async throws -> Result {
        var result = Result()
        result.before = ServeProcess.residentKilobytes(pid)
        let peak = Mutex(result.before)
        let sampler = Task {
            while !Task.isCancelled {
                let now = ServeProcess.residentKilobytes(pid)
                peak.withLock { $0 = max($0, now) }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        defer { sampler.cancel() }
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/users/\(user)/export")
        request.headers.add(name: "Authorization", value: "Bearer \(Self.adminToken)")
        let clock = ContinuousClock()
        let start = clock.now
        let response = try await http.execute(request, timeout: .seconds(3600))
        guard response.status == .ok else { throw ValidationError("export of \(user): \(response.status)") }
        let marker = Array(#""notification_id""#.utf8)
        // The end of the previous chunk, so a marker split between chunks is still counted once.
        var carried: [UInt8] = []
        var last: UInt8 = 0
        for try await buffer in response.body {
            result.bytes += buffer.readableBytes
            let bytes = carried + buffer.readableBytesView
            result.notificationIDs += Self.occurrences(of: marker, in: bytes)
            carried = Array(bytes.suffix(marker.count - 1))
            last = bytes.last ?? last
        }
        result.seconds = elapsedSeconds(clock.now - start)
        sampler.cancel()
        _ = await sampler.result
        result.peak = peak.withLock { max($0, ServeProcess.residentKilobytes(pid)) }
        guard last == UInt8(ascii: "}") else { throw ValidationError("export of \(user) did not end with '}'") }
        return result
    }

    private static func occurrences(of marker: [UInt8], in bytes: [UInt8]) -> Int {
        guard bytes.count >= marker.count else { return 0 }
        var count = 0
        var index = 0
        while index <= bytes.count - marker.count {
            if bytes[index] == marker[0], bytes[index..<(index + marker.count)].elementsEqual(marker) {
                count += 1
                index += marker.count
            } else {
                index += 1
            }
        }
        return count
    }
}
