import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket

/// `GET /v1/me/stream`: the live WebSocket stream.
///
/// The upgrade request is authenticated like any user route — `Authorization: Bearer <session>` or,
/// for browsers that cannot set headers on a WebSocket, `?access_token=` — and may name its device
/// (`?device=` with the device's token or id): that device counts as online while the stream is open.
/// A request that cannot be upgraded (bad credentials, unknown device, not a WebSocket request)
/// reaches the HTTP router's route of the same path, which answers with the JSON error.
struct StreamController {
    /// `nil` where the router is used without a server (HTTP tests): only the HTTP side is served.
    let hub: LiveHub?
    let sessions: SessionStore
    let devices: DeviceStore

    /// The HTTP side: explains why the request was not upgraded.
    func register(in routes: RouteRegistry) {
        routes.add(.get, "/v1/me/stream", access: .anyone) { request, _ -> Response in
            _ = try await authenticate(request)
            throw APIError(
                .upgradeRequired, code: "upgrade_required",
                message: "/v1/me/stream is a WebSocket: send the upgrade request (Connection: Upgrade, Upgrade: websocket)."
            )
        }
    }

    /// The WebSocket side: the router the HTTP/1 upgrade consults.
    func webSocketRouter() -> Router<StreamRequestContext> {
        let router = Router(context: StreamRequestContext.self)
        router.add(middleware: StreamAuthenticationMiddleware(controller: self))
        router.ws("/v1/me/stream") { _, context in
            context.client == nil ? .dontUpgrade : .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            guard let client = context.requestContext.client else { return }
            await serve(client, channel: context.requestContext.channel, inbound: inbound, outbound: outbound)
        }
        return router
    }

    /// The client behind the request, or the 4xx that refuses it.
    func authenticate(_ request: Request) async throws -> StreamClient {
        let query = request.uri.queryParameters
        guard let presented = Authenticator.bearerToken(request) ?? query["access_token"].map(String.init), !presented.isEmpty else {
            throw APIError(.unauthorized, code: "unauthorized", message: "The stream needs 'Authorization: Bearer <session token>' or ?access_token=.")
        }
        guard let token = SessionToken(parsing: presented), let (id, key, expiresAt) = try await sessions.authenticateWithExpiry(token) else {
            throw APIError(.unauthorized, code: "unauthorized", message: "The session token is not valid (unknown, revoked or expired).")
        }
        var deviceID: Int64?
        if let reference = query["device"].map(String.init) {
            guard (1...400).contains(reference.count) else {
                throw APIError(.badRequest, code: "invalid_device", message: "device must be a device token or a device id.")
            }
            guard let found = try await devices.find(userKey: key, reference: reference) else {
                throw APIError(.notFound, code: "device_not_found", message: "This user has no device with this token or id; register it first.")
            }
            deviceID = found
        }
        return StreamClient(user: AuthenticatedUser(id: id, key: key), deviceID: deviceID, sessionHash: Hex.encode(token.hash), sessionExpiresAt: expiresAt)
    }

    /// Runs one stream: registers it, writes its events until it closes, reads (and drops) what the
    /// client sends so that pings, pongs and the close handshake are answered.
    private func serve(_ client: StreamClient, channel: any NIOCore.Channel, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async {
        guard let hub else { return }
        let connection = StreamConnection(
            id: hub.makeConnectionID(), user: client.user, deviceID: client.deviceID, sessionHash: client.sessionHash,
            sessionExpiresAt: client.sessionExpiresAt, channel: channel, settings: hub.settings
        )
        do {
            try await hub.open(connection)
        } catch {
            hub.logger.error("could not record a stream's presence", metadata: ["error": "\(String(reflecting: error))"])
            try? await outbound.close(.unexpectedServerError, reason: "presence unavailable")
            return
        }
        await withDiscardingTaskGroup { group in
            group.addTask {
                while let next = await connection.next() {
                    switch next {
                    case .text(let text):
                        do { try await outbound.write(.text(text)) } catch { return }
                    case .close(let code, let reason):
                        try? await outbound.close(code, reason: reason)
                        return
                    }
                }
            }
            do {
                for try await _ in inbound {}
            } catch {}
            group.cancelAll()
        }
        await hub.closed(connection)
    }
}

/// Authenticates upgrade requests for `StreamController`; one that fails is not upgraded.
struct StreamAuthenticationMiddleware: RouterMiddleware {
    let controller: StreamController

    func handle(_ request: Request, context: StreamRequestContext, next: (Request, StreamRequestContext) async throws -> Response) async throws -> Response {
        var context = context
        context.client = try? await controller.authenticate(request)
        return try await next(request, context)
    }
}
