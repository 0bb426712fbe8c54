import Foundation
import HeraldTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Graceful shutdown")
struct ShutdownTests {
    /// `SIGTERM` ends `herald serve` at once although clients hold connections open: one that never
    /// sent a request (a pool's spare connection), one idle after its answer. The server closes both;
    /// neither holds the shutdown until the idle timeout (set far beyond the test's deadline).
    @Test func connectionsHeldOpenDoNotHoldTheShutdown() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let process = try HeraldProcess(
                arguments: ["serve", "--port", "0", "--sql-dir", TestPostgres.repositoryRoot() + "/sql"],
                environment: db.heraldEnvironment.merging(["HERALD_HTTP_IDLE_TIMEOUT": "600s"]) { $1 }
            )
            defer { process.signal(SIGKILL) }
            let line = try await process.waitForLine(containing: "Herald listening on")
            let port = try #require(line.split(separator: ":").last.flatMap { Int($0) })

            let unused = Task { try await RawHTTPExchange.send([], port: port, timeout: .seconds(120)) }
            let answered = Task {
                try await RawHTTPExchange.send(Array("GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n".utf8), port: port, timeout: .seconds(120))
            }
            try await waitUntil("both connections to be accepted", timeout: .seconds(30)) {
                Self.establishedConnections(toPort: port) == 2
            }
            process.signal(SIGTERM)
            #expect(try await process.waitForExit(timeout: .seconds(30)) == 0)
            #expect(try await unused.value.closedByServer)
            let outcome = try await answered.value
            #expect(outcome.closedByServer)
            #expect(outcome.response.hasPrefix("HTTP/1.1 200"))
        }
    }

    /// The established TCP connections whose local end is 127.0.0.1:`port` (the server's side), from
    /// `/proc/net/tcp`.
    static func establishedConnections(toPort port: Int) -> Int {
        let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
        let local = "0100007F:" + String(format: "%04X", port)
        return table.split(separator: "\n").dropFirst().count { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[1] == local && fields[3] == "01"
        }
    }
}
