import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSession {
    /// A session of its own for one short job (an extension's receipt, a media download): nothing
    /// kept on disk, every request and the whole job bounded by `timeout`. Invalidate it after use.
    static func ephemeral(timeout: Duration) -> URLSession {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = seconds
        configuration.timeoutIntervalForResource = seconds
        return URLSession(configuration: configuration)
    }
}
