import Foundation
import HeraldCore
import Postgres

/// An FCM credential as listed: what identifies the service account, never its key.
public struct FCMCredentialInfo: Sendable, Equatable {
    public var name: String
    public var projectID: String
    public var clientEmail: String
    public var privateKeyID: String
    public var createdAt: Date
    public var updatedAt: Date
    /// False when the stored key file does not open with this server's secret key: the credential
    /// cannot push until it is uploaded again.
    public var isReadable = true

    public init(name: String, projectID: String, clientEmail: String, privateKeyID: String, createdAt: Date = Date(), updatedAt: Date = Date()) {
        self.name = name
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// FCM credentials: service accounts' key files, sealed with AES-256-GCM (`SecretBox`) before they
/// reach the database, as APNs credentials are.
public struct FCMCredentialStore: Sendable {
    public let client: PostgresClient
    private let box: SecretBox

    public init(client: PostgresClient, box: SecretBox) {
        self.client = client
        self.box = box
    }

    /// Creates or replaces the credential `info.name` with the key file `keyFile`. Returns it as
    /// stored, and whether it is new.
    @discardableResult
    public func put(_ info: FCMCredentialInfo, keyFile: [UInt8]) async throws -> (info: FCMCredentialInfo, created: Bool) {
        // The name is sealed in with the key file: a sealed value copied to another row does not open.
        let sealed = PostgresBytes(box.seal(keyFile, context: "fcm:\(info.name)"))
        let row = try await client.query(
            """
            INSERT INTO fcm_credentials (name, project_id, client_email, private_key_id, secret)
            VALUES (\(info.name), \(info.projectID), \(info.clientEmail), \(info.privateKeyID), \(sealed))
            ON CONFLICT (name) DO UPDATE SET project_id = EXCLUDED.project_id, client_email = EXCLUDED.client_email,
                private_key_id = EXCLUDED.private_key_id, secret = EXCLUDED.secret, updated_at = now()
            RETURNING \(Self.columns), xmax = 0
            """
        ).first!
        // xmax is 0 for a row this statement inserted, the updater's id for one it replaced.
        return (try Self.decode(row), try row.decode(column: 6, as: Bool.self))
    }

    /// Every credential, each marked readable or not.
    public func list() async throws -> [FCMCredentialInfo] {
        try await all().map { info, keyFile in
            var info = info
            info.isReadable = keyFile != nil
            return info
        }
    }

    public func delete(_ name: String) async throws -> Bool {
        try await client.query("DELETE FROM fcm_credentials WHERE name = \(name)").affectedRows > 0
    }

    /// Changes whenever a credential is added, replaced or deleted (`APNsCredentialStore.fingerprint`).
    public func fingerprint() async throws -> String {
        let (count, newest) = try await client.query("SELECT count(*), max(updated_at) FROM fcm_credentials")[0].decode((Int64, Date?).self)
        return "\(count)@\(newest?.timeIntervalSince1970 ?? 0)"
    }

    /// Every credential, oldest first (the default for devices that name no project), with its key
    /// file opened — `nil` for one that does not open.
    public func all() async throws -> [(info: FCMCredentialInfo, keyFile: [UInt8]?)] {
        try await client.query("SELECT \(Self.columns), secret FROM fcm_credentials ORDER BY created_at, name").map { row in
            let info = try Self.decode(row)
            let sealed = try row.decode(column: 6, as: PostgresBytes.self)
            return (info, try? box.open(sealed.bytes, context: "fcm:\(info.name)"))
        }
    }

    static let columns: PostgresQuery = "name, project_id, client_email, private_key_id, created_at, updated_at"

    static func decode(_ row: PostgresRow) throws -> FCMCredentialInfo {
        let (name, project, email, keyID, created, updated) = try row.decode((String, String, String, String, Date, Date).self)
        return FCMCredentialInfo(name: name, projectID: project, clientEmail: email, privateKeyID: keyID, createdAt: created, updatedAt: updated)
    }
}
