import APNs
import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// Admin routes for APNs credentials (`/v1/apns/credentials`) and failed pushes (`/v1/push/failures`).
///
/// A credential is checked when uploaded — the `.p8` key parses as a P-256 key, the `.p12` opens with
/// its password — and its secrets are sealed before they are stored. No response ever contains them.
struct APNsController: Sendable {
    let credentials: APNsCredentialStore?
    let push: PushStore

    func register(in routes: RouteRegistry) {
        routes.add(.put, "/v1/apns/credentials/{name}", access: .admin) { request, context in
            try await put(request, context: context)
        }
        routes.add(.get, "/v1/apns/credentials", access: .admin) { _, _ in
            CredentialListBody(credentials: try await store().list().map(CredentialBody.init))
        }
        routes.add(.delete, "/v1/apns/credentials/{name}", access: .admin) { _, context in
            guard try await delete(try Self.name(context)) else { throw Self.credentialNotFound }
            return Response(status: .noContent)
        }
        routes.add(.get, "/v1/push/failures", access: .admin) { request, _ in
            let page = try PageRequest(request, maximum: 100, default: 50)
            var before: Int64?
            if let text = request.uri.queryParameters["before"] {
                guard let value = CanonicalInteger.id(text) else {
                    throw APIError(.badRequest, code: "invalid_before", message: "before must be a failure id (the next_before of a page).")
                }
                before = value
            }
            let failures = try await push.failures(limit: page.limit, before: before)
            return FailureListBody(
                failures: failures.map(FailureBody.init),
                nextBefore: failures.count == page.limit ? failures.last.map { String($0.id) } : nil
            )
        }
    }

    static let credentialNotFound = APIError(.notFound, code: "credential_not_found", message: "No APNs credential with this name.")

    /// Deletes the named credential; false when there was none.
    func delete(_ name: String) async throws -> Bool {
        try await store().delete(name)
    }

    private func store() throws -> APNsCredentialStore {
        guard let credentials else {
            throw APIError.secretsUnavailable("credentials cannot be stored")
        }
        return credentials
    }

    /// The body of `PUT`: `type` `token` (a `.p8` key) or `certificate` (a `.p12`).
    struct Upload: Decodable {
        var type: String
        var environment: String
        var topic: String?
        var key: String?
        var keyID: String?
        var teamID: String?
        var p12: String?
        var password: String?

        enum CodingKeys: String, CodingKey {
            case type, environment, topic, key, p12, password
            case keyID = "key_id"
            case teamID = "team_id"
        }
    }

    func put(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<CredentialBody> {
        let name = try Self.name(try context.parameters.require("name"))
        guard let upload = try await RequestBody.decode(Upload.self, from: request, context: context) else {
            throw Self.invalid("The body must describe the credential: type 'token' (key, key_id, team_id, topic) or 'certificate' (p12, password).")
        }
        let (stored, created) = try await put(name: name, upload: upload)
        return EditedResponse(status: created ? .created : .ok, response: CredentialBody(stored))
    }

    /// Checks an upload and stores it sealed: the route's, and the console's upload form's.
    func put(name: String, upload: Upload) async throws -> (info: APNsCredentialInfo, created: Bool) {
        let store = try store()
        guard ["sandbox", "production"].contains(upload.environment) else { throw Self.invalid("environment must be 'sandbox' or 'production'.") }
        if let topic = upload.topic, !DevicesController.isTopic(topic) { throw Self.invalid("topic must be a bundle id.") }
        let now = Date()
        var info = APNsCredentialInfo(
            name: name,
            kind: .token,
            environment: upload.environment,
            topic: upload.topic ?? "",
            keyID: nil,
            teamID: nil,
            certificateExpiresAt: nil,
            createdAt: now,
            updatedAt: now
        )
        let secret: [UInt8]
        var password: String?
        switch upload.type {
        case "token":
            guard let key = upload.key, let keyID = upload.keyID, let teamID = upload.teamID, let topic = upload.topic else {
                throw Self.invalid("A token credential needs key (the .p8 file's text), key_id, team_id and topic.")
            }
            guard Self.isAppleID(keyID) else { throw Self.invalid("key_id must be the key's 10-character id.") }
            guard Self.isAppleID(teamID) else { throw Self.invalid("team_id must be the 10-character team id.") }
            do {
                _ = try P256Key(pem: key)
            } catch {
                throw Self.invalid("key: \(error.description) (Apple's .p8 files are PKCS#8 P-256 keys, unencrypted).")
            }
            info.kind = .token
            info.keyID = keyID
            info.teamID = teamID
            info.topic = topic
            secret = Array(key.utf8)
        case "certificate":
            guard let encoded = upload.p12, let bytes = Data(base64Encoded: encoded, options: .ignoreUnknownCharacters) else {
                throw Self.invalid("A certificate credential needs p12: the .p12 file, base64.")
            }
            let bundle: PKCS12Bundle
            do {
                bundle = try PKCS12Bundle(bytes: Array(bytes), password: upload.password ?? "")
            } catch {
                throw Self.invalid("p12: \(error.description).")
            }
            guard let topic = upload.topic ?? bundle.topic else {
                throw Self.invalid("The certificate names no topic (subject UID); give topic.")
            }
            info.kind = .certificate
            info.topic = topic
            info.certificateExpiresAt = bundle.notAfter.map { Date(timeIntervalSince1970: Double($0)) }
            secret = Array(bytes)
            password = upload.password ?? ""
        default:
            throw Self.invalid("type must be 'token' (a .p8 key) or 'certificate' (a .p12).")
        }
        return try await store.put(info, secret: secret, password: password)
    }

    struct CredentialBody: ResponseEncodable {
        var name: String
        var type: String
        var environment: String
        var topic: String
        var keyID: String?
        var teamID: String?
        var certificateExpiresAt: String?
        var createdAt: String
        var updatedAt: String
        var status: String

        init(_ info: APNsCredentialInfo) {
            name = info.name
            type = info.kind.rawValue
            environment = info.environment
            topic = info.topic
            keyID = info.keyID
            teamID = info.teamID
            certificateExpiresAt = info.certificateExpiresAt.map(RFC3339.string)
            createdAt = RFC3339.string(from: info.createdAt)
            updatedAt = RFC3339.string(from: info.updatedAt)
            status = info.isReadable ? "ready" : "unreadable"
        }

        enum CodingKeys: String, CodingKey {
            case name, type, environment, topic, status
            case keyID = "key_id"
            case teamID = "team_id"
            case certificateExpiresAt = "certificate_expires_at"
            case createdAt = "created_at"
            case updatedAt = "updated_at"
        }
    }

    struct CredentialListBody: ResponseEncodable {
        var credentials: [CredentialBody]
    }

    struct FailureBody: ResponseEncodable {
        var id: String
        var userID: String?
        var service: String
        var deviceToken: String
        var environment: String
        var topic: String
        var status: Int?
        var reason: String
        var attempts: Int
        var tokenRemoved: Bool
        var failedAt: String

        init(_ failure: PushFailure) {
            id = String(failure.id)
            userID = failure.userID
            service = failure.service.rawValue
            deviceToken = failure.deviceToken
            environment = failure.environment
            topic = failure.topic
            status = failure.status
            reason = failure.reason
            attempts = failure.attempts
            tokenRemoved = failure.tokenRemoved
            failedAt = RFC3339.string(from: failure.failedAt)
        }

        enum CodingKeys: String, CodingKey {
            case id, service, environment, topic, status, reason, attempts
            case userID = "user_id"
            case deviceToken = "device_token"
            case tokenRemoved = "token_removed"
            case failedAt = "failed_at"
        }
    }

    struct FailureListBody: ResponseEncodable {
        var failures: [FailureBody]
        var nextBefore: String?

        enum CodingKeys: String, CodingKey {
            case failures
            case nextBefore = "next_before"
        }
    }

    static func name(_ context: HeraldRequestContext) throws -> String {
        try name(try context.parameters.require("name"))
    }

    /// A credential name, checked.
    static func name(_ name: String) throws -> String {
        guard (1...64).contains(name.utf8.count), name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw APIError(.badRequest, code: "invalid_name", message: "A credential name is 1–64 letters, digits, '-', '_' or '.'.")
        }
        return name
    }

    static func isAppleID(_ text: String) -> Bool {
        text.utf8.count == 10 && text.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber) }
    }

    static func invalid(_ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_credential", message: message)
    }
}
