import HeraldCore
import Postgres

/// Where a push for one device goes, in its push service's terms.
public struct PushAddress: Sendable, Equatable, Hashable {
    public var service: PushService
    /// The APNs device token (lowercase hex), the FCM registration token, or the Web Push
    /// subscription's endpoint URL.
    public var token: String
    /// APNs only: `sandbox` or `production` (empty for the other services).
    public var environment: String
    /// The app at its service: the APNs topic (bundle id); the FCM project id (empty: the first FCM
    /// credential); empty for Web Push.
    public var topic: String
    /// Web Push only: the subscription's keys (`p256dh`, 65 bytes; `auth`, 16 bytes).
    public var webPushKeys: WebPushKeys?

    public struct WebPushKeys: Sendable, Equatable, Hashable {
        public var p256dh: [UInt8]
        public var auth: [UInt8]

        public init(p256dh: [UInt8], auth: [UInt8]) {
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    public init(service: PushService, token: String, environment: String = "", topic: String = "", webPushKeys: WebPushKeys? = nil) {
        self.service = service
        self.token = token
        self.environment = environment
        self.topic = topic
        self.webPushKeys = webPushKeys
    }

    /// An APNs device.
    public static func apns(token: String, environment: String, topic: String) -> PushAddress {
        PushAddress(service: .apns, token: token.lowercased(), environment: environment, topic: topic)
    }

    /// The columns a query reads an address from, `devices` as `alias` (`decode` reads them in order).
    static func columns(_ alias: PostgresQuery) -> PostgresQuery {
        "\(alias).service, \(alias).token, \(alias).environment, \(alias).topic, \(alias).webpush_p256dh, \(alias).webpush_auth"
    }

    /// The number of `columns`.
    static let columnCount = 6

    /// The address in `row`'s `columns`, from `column` on.
    static func decode(_ row: PostgresRow, at column: Int) throws -> PushAddress {
        let service = try row.decode(column: column, as: String.self)
        let p256dh = try row.decode(column: column + 4, as: PostgresBytes?.self)
        let auth = try row.decode(column: column + 5, as: PostgresBytes?.self)
        return PushAddress(
            service: PushService(rawValue: service) ?? .apns,
            token: try row.decode(column: column + 1, as: String.self),
            environment: try row.decode(column: column + 2, as: String.self),
            topic: try row.decode(column: column + 3, as: String.self),
            webPushKeys: p256dh.flatMap { key in auth.map { WebPushKeys(p256dh: key.bytes, auth: $0.bytes) } }
        )
    }
}
