import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import Hummingbird
import HummingbirdCore

/// `GET /v1/me/stream`: the live WebSocket stream (the upgrade itself is `HeraldServerChannel`'s).
///
/// The upgrade request is authenticated like any user route — `Authorization: Bearer <session>` or,
/// for browsers that cannot set headers on a WebSocket, `?access_token=` — and may name its device
/// (`DeviceNaming`: `Herald-Device` or `?device=`): that device counts as online while the stream is
/// open.
/// A request that cannot be upgraded (bad credentials, unknown device, not a WebSocket request)
/// reaches the HTTP router's route of the same path, which answers with the JSON error.
struct LiveController {
    /// `nil` where the router is used without a server (HTTP tests): only the HTTP side is served.
    let hub: LiveHub?
    let sessions: SessionStore
    let devices: DeviceStore
    let limits: RequestLimits
    /// Pages on these origins (and Herald's own) may open the stream; a browser's upgrade from any
    /// other is refused, since the token in its query would otherwise open it for that page.
    let crossOrigin: CrossOriginPolicy

    /// The HTTP side: explains why the request was not upgraded.
    func register(in routes: RouteRegistry) {
        routes.add(.get, "/v1/me/stream", access: .anyone, crossOrigin: true) { request, context -> Response in
            _ = try await authenticate(request, address: context.remoteAddress?.ipAddress)
            if request.headers[HTTPField.Name(RequestHeadFilter.brokenWebSocketHeader)!] != nil {
                throw APIError(
                    .badRequest,
                    code: "invalid_websocket_handshake",
                    message: "A WebSocket upgrade needs one Sec-WebSocket-Key and Sec-WebSocket-Version: 13 (RFC 6455 §4.1)."
                )
            }
            throw APIError(
                .upgradeRequired,
                code: "upgrade_required",
                message: "/v1/me/stream is a WebSocket: send the upgrade request (Connection: Upgrade, Upgrade: websocket)."
            )
        }
    }

    /// The client behind the request, or the 4xx that refuses it.
    func authenticate(_ request: Request, address: String?) async throws -> LiveClient {
        try await authenticate(
            authorization: request.headers[.authorization],
            device: request.headers[DeviceNaming.header],
            query: request.uri.queryParameters,
            address: address
        )
    }

    /// For the upgrade: the client behind an upgrade request for this route; throws for any other path,
    /// and for a page on an origin that may not call Herald (`origin`, `host`: the request's headers).
    func authenticate(
        uri: String,
        authorization: String?,
        device: String?,
        origin: String?,
        host: String?,
        address: String?
    ) async throws -> LiveClient {
        let parsed = URI(uri)
        guard parsed.path == "/v1/me/stream" else { throw APIError(.notFound, code: "not_found", message: "Not a stream.") }
        guard crossOrigin.admits(origin: origin, host: host) else {
            throw APIError(
                .forbidden,
                code: "origin_not_allowed",
                message: "Pages on \(origin ?? "") may not call Herald: list the origin in HERALD_CORS_ORIGINS."
            )
        }
        guard hub != nil else {
            throw APIError(.serviceUnavailable, code: "streams_unavailable", message: "This server does not serve live streams.")
        }
        return try await authenticate(authorization: authorization, device: device, query: parsed.queryParameters, address: address)
    }

    /// Within the rate limits of user routes (`RequestLimits`), like every other user route.
    private func authenticate(authorization: String?, device: String?, query: Parameters, address: String?) async throws -> LiveClient {
        let presented = Authenticator.bearerToken(authorization) ?? query["access_token"].map(String.init)
        try await limits.admitUser(address: address, bearer: presented)
        do {
            return try await authenticate(presented, device: device, query: query)
        } catch let error as APIError where error.status == .unauthorized {
            limits.authenticationFailed(address: address)
            throw error
        }
    }

    private func authenticate(_ presented: String?, device: String?, query: Parameters) async throws -> LiveClient {
        guard let presented, !presented.isEmpty else {
            throw APIError(
                .unauthorized,
                code: "unauthorized",
                message: "The stream needs 'Authorization: Bearer <session token>' or ?access_token=."
            )
        }
        guard let token = SessionToken(parsing: presented), let session = try await sessions.authenticateWithExpiry(token) else {
            throw APIError(.unauthorized, code: "unauthorized", message: "The session token is not valid (unknown, revoked or expired).")
        }
        var deviceID: Int64?
        if let reference = try DeviceNaming.reference(header: device, query: query["device"].map(String.init)) {
            guard let found = try await devices.find(userKey: session.userKey, reference: reference) else { throw DeviceNaming.notFound }
            deviceID = found
        }
        return LiveClient(
            user: AuthenticatedUser(id: session.userID, key: session.userKey),
            deviceID: deviceID,
            sessionHash: Hex.encode(token.hash),
            sessionExpiresAt: session.expiresAt
        )
    }
}

/// Who opened a stream, as its upgrade request proved.
struct LiveClient: Sendable {
    var user: AuthenticatedUser
    var deviceID: Int64?
    /// Hex of the session token's hash, and when the session expires.
    var sessionHash: String
    var sessionExpiresAt: Date
}
