import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// The server's VAPID key for Web Push (`/v1/webpush/key`): its public half for pages to subscribe
/// with (`applicationServerKey`), and an admin's upload replacing it. The key is made at first start
/// and kept sealed; the private half is never returned.
struct WebPushController: Sendable {
    let settings: SettingsStore
    let secrets: SecretBox?

    func register(in routes: RouteRegistry) {
        routes.add(.get, "/v1/webpush/key", access: .anyone, crossOrigin: true) { _, _ in
            try await key()
        }
        routes.add(.put, "/v1/webpush/key", access: .admin) { request, context in
            guard let upload = try await RequestBody.decode(Upload.self, from: request, context: context) else {
                throw Self.invalid("The body must give private_key: the VAPID key's PEM (a P-256 private key).")
            }
            return try await replace(upload)
        }
    }

    /// The public key (made now if there is none yet).
    func key() async throws -> KeyBody {
        guard let key = try await settings.vapidKey(box: try secretBox()).key else { throw Self.unreadable }
        return KeyBody(publicKey: Base64URL.encode(key.publicPoint))
    }

    /// Checks an uploaded key and stores it sealed: the route's, and the console's upload form's.
    func replace(_ upload: Upload) async throws -> KeyBody {
        let key: P256Key
        do throws(CryptoKeyError) {
            key = try P256Key(pem: upload.privateKey)
        } catch {
            throw Self.invalid("private_key: \(error.description) (a P-256 private key, PEM).")
        }
        _ = try await settings.replaceVAPIDKey(key, box: try secretBox())
        return KeyBody(publicKey: Base64URL.encode(key.publicPoint))
    }

    private func secretBox() throws -> SecretBox {
        guard let secrets else {
            throw APIError.secretsUnavailable("the VAPID key cannot be kept")
        }
        return secrets
    }

    static let unreadable = APIError(
        .serviceUnavailable,
        code: "vapid_key_unreadable",
        message: "The stored VAPID key does not open with this server's secret key; upload one (PUT /v1/webpush/key)."
    )

    static func invalid(_ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_credential", message: message)
    }

    struct Upload: Decodable {
        var privateKey: String

        enum CodingKeys: String, CodingKey {
            case privateKey = "private_key"
        }
    }

    struct KeyBody: ResponseEncodable {
        /// The uncompressed public point, base64url: what `pushManager.subscribe` takes as
        /// `applicationServerKey`.
        var publicKey: String

        enum CodingKeys: String, CodingKey {
            case publicKey = "public_key"
        }
    }
}
