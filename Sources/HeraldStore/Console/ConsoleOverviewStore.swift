import Foundation
import Postgres

/// What the admin console's overview shows: how much there is, and what happened in the last day.
public struct ConsoleOverviewStore: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    public struct Overview: Sendable, Equatable {
        public var users: Int64
        public var devices: Int64
        public var channels: Int64
        /// Sends and the refresh pushes they caused, per hour for the last 24 hours, oldest first (24 entries).
        public var sendsByHour: [Int64]
        public var pushesByHour: [Int64]
        public var pushFailures: Int64
        public var databaseVersion: String
        public var databaseBytes: Int64
        public var migrations: Int64
        public var credentials: [Credential]
    }

    /// An APNs credential as the overview lists it (never its secret).
    public struct Credential: Sendable, Equatable {
        public var name: String
        public var kind: String
        public var environment: String
        public var topic: String
        public var certificateExpiresAt: Date?
    }

    /// The stored APNs credentials, by name (their descriptions only).
    public func credentials() async throws -> [Credential] {
        try await client.query(Self.credentialsQuery).map(Self.credential)
    }

    static let credentialsQuery: PostgresQuery = "SELECT name, kind, environment, topic, certificate_expires_at FROM apns_credentials ORDER BY name"

    static func credential(_ row: PostgresRow) throws -> Credential {
        let (name, kind, environment, topic, expires) = try row.decode((String, String, String, String, Date?).self)
        return Credential(name: name, kind: kind, environment: environment, topic: topic, certificateExpiresAt: expires)
    }

    /// The stored FCM credentials, by name (what identifies them; never their keys).
    public func fcmCredentials() async throws -> [(name: String, projectID: String, clientEmail: String)] {
        try await client.query("SELECT name, project_id, client_email FROM fcm_credentials ORDER BY name").map { row in
            let (name, project, email) = try row.decode((String, String, String).self)
            return (name, project, email)
        }
    }

    public func overview() async throws -> Overview {
        // One snapshot for the counts, so they agree with one another.
        try await client.withTransaction { connection in
            let counts = try await connection.query(
                """
                SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM devices), (SELECT count(*) FROM channels),
                    (SELECT count(*) FROM push_failures WHERE failed_at > now() - interval '24 hours'),
                    current_setting('server_version'), pg_database_size(current_database()),
                    (SELECT count(*) FROM herald_schema_migrations)
                """
            )
            let (users, devices, channels, failures, version, bytes, migrations) = try counts[0].decode(
                (Int64, Int64, Int64, Int64, String, Int64, Int64).self
            )
            var sends = [Int64](repeating: 0, count: 24)
            var pushes = [Int64](repeating: 0, count: 24)
            let hours = try await connection.query(
                """
                SELECT 23 - floor(extract(epoch FROM now() - created_at) / 3600)::int, count(*), sum(pushes_sent)::bigint
                FROM notifications WHERE created_at > now() - interval '24 hours' AND deleted_at IS NULL
                GROUP BY 1
                """
            )
            for row in hours {
                let (hour, count, pushed) = try row.decode((Int32, Int64, Int64).self)
                guard (0..<24).contains(Int(hour)) else { continue }
                sends[Int(hour)] = count
                pushes[Int(hour)] = pushed
            }
            let credentials = try await connection.query(Self.credentialsQuery).map(Self.credential)
            return Overview(
                users: users,
                devices: devices,
                channels: channels,
                sendsByHour: sends,
                pushesByHour: pushes,
                pushFailures: failures,
                databaseVersion: version,
                databaseBytes: bytes,
                migrations: migrations,
                credentials: credentials
            )
        }
    }
}
