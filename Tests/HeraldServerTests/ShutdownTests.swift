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

            // Opened first: the server accepts in order, so once the second has its answer, the
            // first is a connection the server holds too.
            let unused = try LoopbackSocket.connect(port: port, configure: Self.receiveTimeout)
            defer { close(unused) }
            let answered = try LoopbackSocket.connect(port: port, configure: Self.receiveTimeout)
            defer { close(answered) }
            let request = Array("GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n".utf8)
            #expect(request.withUnsafeBytes { send(answered, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == request.count)
            let answer = try await Self.onThread { Self.receive(answered, until: { $0.contains("\r\n\r\n") }) }
            #expect(answer.text.hasPrefix("HTTP/1.1 200"))

            process.signal(SIGTERM)
            #expect(try await process.waitForExit(timeout: .seconds(30)) == 0)
            // Both end with it (end of file, not the receive timeout).
            #expect(try await Self.onThread { Self.receive(unused, until: { _ in false }) }.closed)
            #expect(try await Self.onThread { Self.receive(answered, until: { _ in false }) }.closed)
        }
    }

    static func receiveTimeout(_ descriptor: Int32) {
        var limit = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// What `descriptor` receives until `enough` says so, or the peer closes (`closed`), or the
    /// receive timeout ends it.
    static func receive(_ descriptor: Int32, until enough: (String) -> Bool) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (String(decoding: received, as: UTF8.self), count == 0 || errno == ECONNRESET) }
            received += buffer[..<count]
            if enough(String(decoding: received, as: UTF8.self)) { return (String(decoding: received, as: UTF8.self), false) }
        }
    }

    /// Runs blocking socket reads on a thread of their own, off the cooperative pool.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async throws -> T {
        await withCheckedContinuation { continuation in Thread { continuation.resume(returning: body()) }.start() }
    }
}
