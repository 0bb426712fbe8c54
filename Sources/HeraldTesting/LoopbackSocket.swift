import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Blocking TCP sockets to a test server on 127.0.0.1, for clients that must misbehave in ways no
/// HTTP library will (read slowly, send malformed bytes).
public enum LoopbackSocket {
    /// A connected socket; `configure` runs on it before the connection (buffer sizes, timeouts).
    /// The caller closes it.
    public static func connect(port: Int, configure: (Int32) -> Void = { _ in }) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HeraldProcessError(message: "socket failed: errno \(errno)") }
        configure(descriptor)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let failure = errno
            close(descriptor)
            throw HeraldProcessError(message: "connect failed: errno \(failure)")
        }
        return descriptor
    }
}
