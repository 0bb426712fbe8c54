import Foundation
import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// The context of the WebSocket upgrade router (`GET /v1/me/stream`): the connection's channel (so a
/// slow consumer's connection can be cut) and the client `StreamController` authenticated.
struct StreamRequestContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let channel: any NIOCore.Channel
    var client: StreamClient?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}

/// Who opened a stream, as its upgrade request proved.
struct StreamClient: Sendable {
    var user: AuthenticatedUser
    var deviceID: Int64?
    /// Hex of the session token's hash, and when the session expires.
    var sessionHash: String
    var sessionExpiresAt: Date
}
