import HeraldCore
import HeraldStore

/// One push for one device, in no service's format yet: each transport renders it in its own.
public struct PushMessage: Sendable {
    public enum Content: Sendable {
        /// A silent refresh: the user's channels with their unread counts, and the notification that
        /// caused it.
        case refresh(channels: [(url: String, unread: Int64)], notificationID: Int64?)
        /// A visible alert.
        case alert(AlertPayload.Content, priority: PushOptions.Priority, collapseID: String?)
    }

    public var address: PushAddress
    public var userKey: Int64
    public var content: Content
    /// When the push stops being worth delivering, in seconds since 1970.
    public var expiration: Int64

    public init(address: PushAddress, userKey: Int64, content: Content, expiration: Int64) {
        self.address = address
        self.userKey = userKey
        self.content = content
        self.expiration = expiration
    }

    /// The collapse key of a user's refreshes: a newer one replaces a queued older one.
    var refreshCollapseKey: String { "herald-refresh-\(userKey)" }

    /// Seconds until `expiration`, at least 0.
    func timeToLive(now: Int64) -> Int { Int(max(0, expiration - now)) }
}

/// Where one push service's pushes go: its credentials' clients, reloaded when they change.
public protocol PushServiceTransport: Sendable {
    var service: PushService { get }
    /// Reloads the credentials when they changed since the last look.
    func refresh() async throws
    /// Sends every message (each to a device of this service); returns each one's result and, for an
    /// answered one, how long its request took — in order.
    func send(_ messages: [PushMessage]) async -> [(result: PushResult, elapsed: Duration)]
    /// Closes the connections.
    func shutdown() async
}
