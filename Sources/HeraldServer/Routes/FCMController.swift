import FCM
import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import NIOCore

/// Admin routes for FCM credentials (`/v1/fcm/credentials`): a service account's key file, as the
/// Firebase console downloads it, is checked when uploaded (every field FCM needs, the key parses as
/// RSA) and sealed before it is stored. No response ever contains the key.
struct FCMController: Sendable {
    let credentials: FCMCredentialStore?

    /// A key file is a few kilobytes; this leaves room and refuses anything else.
    static let maximumKeyFileBytes = 64 * 1024

    func register(in routes: RouteRegistry) {
        routes.add(.put, "/v1/fcm/credentials/{name}", access: .admin) { request, context in
            let name = try APNsController.name(context)
            if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > Self.maximumKeyFileBytes {
                throw RequestBody.tooLarge(Self.maximumKeyFileBytes)
            }
            let body: [UInt8]
            do {
                body = Array(buffer: try await request.body.collect(upTo: Self.maximumKeyFileBytes))
            } catch is NIOTooManyBytesError {
                throw RequestBody.tooLarge(Self.maximumKeyFileBytes)
            }
            let (stored, created) = try await put(name: name, keyFile: body)
            return EditedResponse(status: created ? .created : .ok, response: CredentialBody(stored))
        }
        routes.add(.get, "/v1/fcm/credentials", access: .admin) { _, _ in
            CredentialListBody(credentials: try await store().list().map(CredentialBody.init))
        }
        routes.add(.delete, "/v1/fcm/credentials/{name}", access: .admin) { _, context in
            guard try await delete(try APNsController.name(context)) else { throw Self.credentialNotFound }
            return Response(status: .noContent)
        }
    }

    static let credentialNotFound = APIError(.notFound, code: "credential_not_found", message: "No FCM credential with this name.")

    /// Deletes the named credential; false when there was none.
    func delete(_ name: String) async throws -> Bool {
        try await store().delete(name)
    }

    /// Checks a key file and stores it sealed: the route's, and the console's upload form's.
    func put(name: String, keyFile: [UInt8]) async throws -> (info: FCMCredentialInfo, created: Bool) {
        let store = try store()
        guard StrictJSON.parse(Data(keyFile)) != nil else {
            throw APIError(
                .badRequest,
                code: "invalid_json",
                message: "The body must be the service account's key file (JSON), as the Firebase console downloads it."
            )
        }
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(json: keyFile)
        } catch {
            throw APIError(.badRequest, code: "invalid_credential", message: "\(error.field) \(error.message).")
        }
        let info = FCMCredentialInfo(name: name, projectID: account.projectID, clientEmail: account.clientEmail, privateKeyID: account.privateKeyID)
        return try await store.put(info, keyFile: keyFile)
    }

    private func store() throws -> FCMCredentialStore {
        guard let credentials else {
            throw APIError.secretsUnavailable("credentials cannot be stored")
        }
        return credentials
    }

    struct CredentialBody: ResponseEncodable {
        var name: String
        var projectID: String
        var clientEmail: String
        var privateKeyID: String
        var createdAt: String
        var updatedAt: String
        var status: String

        init(_ info: FCMCredentialInfo) {
            name = info.name
            projectID = info.projectID
            clientEmail = info.clientEmail
            privateKeyID = info.privateKeyID
            createdAt = RFC3339.string(from: info.createdAt)
            updatedAt = RFC3339.string(from: info.updatedAt)
            status = info.isReadable ? "ready" : "unreadable"
        }

        enum CodingKeys: String, CodingKey {
            case name, status
            case projectID = "project_id"
            case clientEmail = "client_email"
            case privateKeyID = "private_key_id"
            case createdAt = "created_at"
            case updatedAt = "updated_at"
        }
    }

    struct CredentialListBody: ResponseEncodable {
        var credentials: [CredentialBody]
    }
}
