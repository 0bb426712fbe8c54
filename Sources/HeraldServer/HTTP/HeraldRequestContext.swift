import Foundation
import HeraldCore
import HeraldServices
import Hummingbird
import NIOCore

/// The per-request context of Herald's router. Later capabilities (authentication, the calling user)
/// add their fields here.
public struct HeraldRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    /// The user a session token authenticated, on user routes.
    public var user: AuthenticatedUser?
    /// The client's address (NIO caches it per connection), for the per-address rate limits.
    public var remoteAddress: SocketAddress?
    /// Where this request's reads go: the standby, on routes whose reads may go there
    /// (`RouteRegistry`) while it answers them, else the primary.
    var reads = RequestReads.primary

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// The largest request body accepted (larger ones get a 413): 1 MiB.
    public var maxUploadSize: Int { 1 << 20 }

    /// Codable answers with their keys sorted (see `CanonicalJSON`).
    public var responseEncoder: JSONEncoder { CanonicalJSON.encoder }
}

/// The user behind a valid session token.
public struct AuthenticatedUser: Sendable, Equatable {
    public var id: String
    /// The user's internal key (`users.key`).
    public var key: Int64
}
