import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A live-stream client that upgrades and then does not read: the slow consumer of the tests.
///
/// A plain blocking socket with a tiny receive buffer, so the server's writes back up after a few
/// kilobytes. `drain()` later reads everything the server sent until it closed the connection, and
/// parses the WebSocket frames (server frames are never masked). Every blocking read and write gives
/// up after a minute, so that a server that never answers or never closes fails the test, not hangs it.
public final class SlowStreamReader: @unchecked Sendable {
    private let descriptor: Int32
    private var pending: [UInt8] = []

    public init(port: Int, session: String) throws {
        descriptor = try LoopbackSocket.connect(port: port) { descriptor in
            var size: Int32 = 4096
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            var limit = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        let request =
            "GET /v1/me/stream HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer \(session)\r\n\r\n"
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, 0) }) == bytes.count else {
            close(descriptor)
            throw HeraldProcessError(message: "could not send the upgrade request")
        }
        // Read just the response head; frames that came with it stay in `pending`.
        while true {
            if let end = pending.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
                pending.removeSubrange(..<end.upperBound)
                guard head.hasPrefix("HTTP/1.1 101") else {
                    close(descriptor)
                    throw HeraldProcessError(message: "not upgraded: \(head)")
                }
                return
            }
            guard try readSome() else {
                close(descriptor)
                throw HeraldProcessError(message: "closed during the upgrade")
            }
        }
    }

    deinit {
        close(descriptor)
    }

    /// A decoded server frame.
    public struct Frame: Sendable {
        public var opcode: UInt8
        public var payload: [UInt8]

        /// The close code of a close frame.
        public var closeCode: UInt16? {
            opcode == 0x8 && payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
        }
    }

    /// Reads until the server closes the connection (blocking; call it off the cooperative pool's
    /// hot path, it is a test) and returns the frames it sent.
    public func drain() throws -> [Frame] {
        while try readSome() {}
        var frames: [Frame] = []
        var index = 0
        while index + 2 <= pending.count {
            let opcode = pending[index] & 0x0F
            var length = Int(pending[index + 1] & 0x7F)
            var offset = index + 2
            if length == 126 {
                guard offset + 2 <= pending.count else { break }
                length = Int(pending[offset]) << 8 | Int(pending[offset + 1])
                offset += 2
            } else if length == 127 {
                guard offset + 8 <= pending.count else { break }
                length = pending[offset..<offset + 8].reduce(0) { $0 << 8 | Int($1) }
                offset += 8
            }
            guard offset + length <= pending.count else { break }
            frames.append(Frame(opcode: opcode, payload: Array(pending[offset..<offset + length])))
            index = offset + length
        }
        return frames
    }

    /// Sends `count` pings (125-byte payloads, masked as a client must) without reading the pongs;
    /// returns how many went out before the connection refused more (blocking).
    public func sendPings(_ count: Int) -> Int {
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        let payload = (0..<125).map { UInt8($0 & 0x7F) ^ mask[$0 % 4] }
        let frame: [UInt8] = [0x89, 0x80 | 125] + mask + payload
        var batch: [UInt8] = []
        for _ in 0..<count { batch += frame }
        var offset = 0
        while offset < batch.count {
            let written = batch[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { break }
            offset += written
        }
        return offset / frame.count
    }

    /// False at end of stream (or a reset, which is how a cut connection may end).
    private func readSome() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == ECONNRESET { return false }
            if count < 0 && errno == EAGAIN { throw HeraldProcessError(message: "the server sent nothing and kept the connection for a minute") }
            guard count >= 0 else { throw HeraldProcessError(message: "recv failed: errno \(errno)") }
            if count == 0 { return false }
            pending.append(contentsOf: chunk[0..<count])
            return true
        }
    }
}
