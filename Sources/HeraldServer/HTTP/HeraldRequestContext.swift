import Foundation
import Hummingbird

/// The per-request context of Herald's router. Later capabilities (authentication, the calling user)
/// add their fields here.
public struct HeraldRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    /// The user a session token authenticated, on user routes.
    public var user: AuthenticatedUser?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }

    /// The largest request body accepted (larger ones get a 413): 1 MiB.
    public var maxUploadSize: Int { 1 << 20 }

    /// Codable answers with their keys sorted: `JSONEncoder` otherwise writes them in a dictionary's
    /// order, which changes from one response to the next. Slashes stay as they are (`https://…`).
    public var responseEncoder: JSONEncoder { Self.encoder }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}

/// The user behind a valid session token.
public struct AuthenticatedUser: Sendable, Equatable {
    public var id: String
    /// The user's internal key (`users.key`).
    public var key: Int64
}
