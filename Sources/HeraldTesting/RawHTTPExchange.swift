import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Sends bytes that no HTTP client would send — malformed requests, oversized heads — and reads
/// everything the server answers until it closes the connection.
///
/// A blocking socket on a thread of its own (never on the cooperative pool the server under test may
/// share), with a receive timeout, so that a server that neither answers nor closes fails the test
/// instead of hanging it.
public enum RawHTTPExchange {
    /// What came back, and whether the server closed the connection (rather than the timeout ending it).
    public struct Outcome: Sendable {
        public var response: String
        public var closedByServer: Bool
    }

    public static func send(_ bytes: [UInt8], port: Int, timeout: Duration = .seconds(10)) async throws -> Outcome {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Outcome, any Error>) in
            Thread {
                continuation.resume(with: Result { try exchange(bytes, port: port, timeout: timeout) })
            }.start()
        }
    }

    private static func exchange(_ bytes: [UInt8], port: Int, timeout: Duration) throws -> Outcome {
        let descriptor = try LoopbackSocket.connect(port: port) { descriptor in
            var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        defer { close(descriptor) }
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            // The server may answer and close before it has read everything (an oversized head).
            guard count > 0 else { break }
            sent += count
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer[..<count]
                continue
            }
            // 0: the server closed; -1: the timeout (EAGAIN) or a reset after its answer.
            let closed = count == 0 || errno == ECONNRESET
            return Outcome(response: String(decoding: received, as: UTF8.self), closedByServer: closed)
        }
    }
}
