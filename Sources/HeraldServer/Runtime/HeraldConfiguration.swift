import Foundation
import HeraldCore
import HeraldServices
import Logging
import WebPush

/// Everything `herald serve` and `herald migrate` are configured with.
///
/// Each setting comes from a command-line flag, else an environment variable, else a default; the
/// configuration table in docs/configuration.md lists them all.
public struct HeraldConfiguration: Sendable {
    /// `--host` / `HERALD_HOST`.
    public var host: String = "127.0.0.1"
    /// `--port` / `HERALD_PORT`; 0 picks a free port (printed at start).
    public var port: Int = 8080
    /// `--log-level` / `HERALD_LOG_LEVEL`.
    public var logLevel: Logger.Level = .info
    /// `--data-dir` / `HERALD_DATA_DIR`: the embedded cluster and generated secrets live here.
    public var dataDirectory: String = ".herald"
    /// `--database-url` / `DATABASE_URL`: a libpq URI or conninfo string. When unset and no `PG*`
    /// variable selects a server, Herald runs its embedded cluster.
    public var databaseURL: String?
    /// `HERALD_DIRECT_DATABASE_URL`: the database server itself when `DATABASE_URL` names a pooler in
    /// transaction mode (PgBouncer); LISTEN connections and migrations use it. Default: `DATABASE_URL`.
    public var directDatabaseURL: String?
    /// `HERALD_DB_PREPARED_STATEMENTS` (`on`/`off`): prepare statements once per connection; `off`
    /// for a pooler that cannot keep named statements (PgBouncer before 1.21).
    public var databasePreparedStatements = true
    /// `--read-database-url` / `HERALD_READ_DATABASE_URL`: a hot standby of the database, for sync
    /// reads (see docs/scaling.md); `nil` reads everything on the primary.
    public var readDatabaseURL: String?
    /// `HERALD_READ_MAX_LAG`: the most the standby may trail the primary and still take reads.
    public var readMaximumLag: Duration = .seconds(5)
    /// True when a standard libpq variable (`PGHOST`, `PGDATABASE`, …) names the server.
    public var usesPGEnvironment: Bool = false
    /// `--db-pool-size` / `HERALD_DB_POOL_SIZE`.
    public var databasePoolSize: Int = 10
    /// `HERALD_DB_STATEMENT_TIMEOUT`: the longest one statement of `herald serve` may run; `nil` (`0`)
    /// for none.
    public var databaseStatementTimeout: Duration? = .seconds(30)
    /// `HERALD_RATE_LIMIT_SESSION`, `HERALD_RATE_LIMIT_ADDRESS`, `HERALD_RATE_LIMIT_AUTH_FAILURES`.
    public var rateLimits = RequestLimits.Settings()
    /// `HERALD_FANOUT_BATCH_SIZE`: users reached per transaction by an `audience: "all"` send.
    public var fanoutBatchSize: Int = 10_000
    /// `HERALD_CHANGE_RETENTION`: how long deleted notifications (and deleted channels, for channel
    /// lists) stay as tombstones in change streams; older sync tokens stop being live.
    public var changeRetention: Duration = .seconds(30 * 24 * 3600)
    /// `HERALD_SYNC_HUGE_GAP`: more pending changes than this and a sync token is no longer live.
    public var syncHugeGap: Int = 300
    /// `HERALD_ADMIN_TOKEN`. Generated and kept in the data directory for the embedded default.
    public var adminToken: String?
    /// The shortest `HERALD_ADMIN_TOKEN` accepted.
    public static let minimumAdminTokenLength = 32
    /// `HERALD_SECRET_KEY`: 64 hex characters (32 bytes) sealing APNs secrets at rest; when unset, a key
    /// is generated once and kept in `<data dir>/secret.key`.
    public var secretKey: String?
    /// `HERALD_APNS_URL`: overrides both APNs endpoints (a local server in tests).
    public var apnsURL: String?
    /// `HERALD_APNS_CA_FILE`: a PEM file of extra trust roots for the APNs connection.
    public var apnsCAFile: String?
    /// `HERALD_FCM_URL`: FCM's base URL instead of `https://fcm.googleapis.com` (a proxy, a local
    /// server in tests).
    public var fcmURL: URL?
    /// `HERALD_PUSH_CA_FILE`: a PEM file of extra trust roots for FCM and the Web Push services.
    public var pushCAFile: String?
    /// `HERALD_VAPID_SUBJECT`: the operator's contact in Web Push's VAPID tokens (`mailto:` or
    /// `https:`), for push services to reach whoever runs the server.
    public var vapidSubject: String?
    /// `HERALD_WEBPUSH_HOSTS`: the push services browsers' subscriptions may name (host names, each
    /// with its subdomains, comma-separated); by default today's browsers' own.
    public var webPushHosts = WebPushHosts.browsers
    /// `HERALD_CORS_ORIGINS`: the origins whose pages may call the user routes from a browser (exact
    /// origins, comma-separated); by default none but Herald's own.
    public var crossOrigin = CrossOriginPolicy.sameOriginOnly
    /// `HERALD_REFRESH_MIN_INTERVAL`: the least time between two refresh pushes to one device.
    public var refreshMinimumInterval: Duration = .seconds(60)
    /// `HERALD_PUSH_EXPIRATION`: how long APNs keeps trying to deliver a refresh push (`apns-expiration`).
    public var pushExpiration: Duration = .seconds(3600)
    /// `HERALD_HTTP_IDLE_TIMEOUT`: an HTTP connection with no request in progress for this long is
    /// closed, as is one that has not sent a whole first request head by then.
    public var httpIdleTimeout: Duration = .seconds(75)
    /// `HERALD_PUSH_LEASE`: how long a dispatcher's claim on a device lasts; a crashed dispatcher's
    /// devices are taken over by another after it.
    public var pushLease: Duration = .seconds(60)
    /// `HERALD_SCHEDULE_LEASE`: how long a scheduler's claim on a due scheduled send lasts; a crashed
    /// scheduler's sends are made by another after it.
    public var scheduleLease: Duration = .seconds(60)
    /// `HERALD_PUSH_BATCH_SIZE`: devices a dispatcher claims (and outbox recipients it expands) at a time.
    public var pushBatchSize = PushSettings().batchSize
    /// `HERALD_PUSH_STREAMS`: pushes in flight at once on one APNs connection (fewer when the server
    /// allows fewer streams).
    public var pushStreams = PushSettings().concurrency
    /// `HERALD_WEBHOOK_TIMEOUT`: how long a webhook request may take before it counts as failed and
    /// is retried. A dispatcher's claim on a batch lasts three times this and 2 s more: a crashed
    /// replica's batches are posted again after it.
    public var webhookTimeout: Duration = .seconds(10)
    /// Live streams and presence: `HERALD_PUSH_MULTI_DEVICE`, `HERALD_STREAM_PING_INTERVAL`,
    /// `HERALD_STREAM_QUEUE_LIMIT`, `HERALD_PRESENCE_HEARTBEAT`, `HERALD_PRESENCE_TTL`.
    public var stream = LiveSettings()
    /// Answers from memory and long polls (see `ChangeNotifier`): `HERALD_MEMORY_ANSWERS` (`on`/`off`),
    /// `HERALD_MEMORY_ENTRIES` (kept poll answers, and as many sessions and devices),
    /// `HERALD_LONG_POLL_MAX_PER_USER`, `HERALD_LONG_POLL_MAX`.
    public var memory = ChangeNotifier.Settings()
    /// Alert pushes: `HERALD_APP_ID` (the payload's `app_id`), `HERALD_PUSH_BADGE` (`on`/`off`),
    /// `HERALD_PUSH_BADGE_CAP`, `HERALD_PUSH_NO_DETAIL_TEXT`.
    public var appID = "herald"
    public var pushBadge = true
    /// `HERALD_PUSH_LOG_PAYLOADS`: the logging transport logs payloads too.
    public var logPushPayloads = false
    public var pushBadgeCap: Int?
    public var noDetailText = "You have a new notification"
    /// `--sql-dir` / `HERALD_SQL_DIR`: where the migration files are.
    public var migrationsDirectory: String?
    /// `HERALD_CONSOLE` (`on`/`off`): serve the admin console at `/console`.
    public var consoleEnabled = true
    /// `HERALD_CONSOLE_DIR`: the console's templates and assets (default `console/`, found as `sql/` is).
    public var consoleDirectory: String?
    /// `HERALD_CONSOLE_SESSION_LIFETIME`: how long a console sign-in lasts.
    public var consoleSessionLifetime: Duration = .seconds(12 * 3600)
    /// `HERALD_FIXTURES_DIR`: the fixtures the embedded default loads on first start (default `fixtures/`).
    public var fixturesDirectory: String?
    /// `HERALD_WEB_DIR`: the web client served at `/client/` (default `web/`, found as `sql/` is).
    public var webDirectory: String?
    /// `HERALD_DEMO` (`on`/`off`): serve the web client's demo page at `/demo`.
    public var demoEnabled = false

    public init() {}

    /// The libpq variables that choose a server; any of them set means "not the embedded default".
    static let serverSelectingPGVariables = ["PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"]

    /// Fills every setting not given on the command line from the environment.
    public static func resolve(
        host: String? = nil,
        port: Int? = nil,
        logLevel: String? = nil,
        dataDirectory: String? = nil,
        databaseURL: String? = nil,
        readDatabaseURL: String? = nil,
        databasePoolSize: Int? = nil,
        migrationsDirectory: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> HeraldConfiguration {
        func value(_ flag: String?, _ variable: String) -> String? {
            if let flag, !flag.isEmpty { return flag }
            if let env = environment[variable], !env.isEmpty { return env }
            return nil
        }
        func integer(_ flag: Int?, _ variable: String) throws -> Int? {
            if let flag { return flag }
            guard let text = environment[variable], !text.isEmpty else { return nil }
            guard let number = Int(text) else { throw ConfigurationError("\(variable) must be a number, got '\(text)'") }
            return number
        }
        var configuration = HeraldConfiguration()
        if let host = value(host, "HERALD_HOST") { configuration.host = host }
        if let port = try integer(port, "HERALD_PORT") { configuration.port = port }
        guard (0...65535).contains(configuration.port) else {
            throw ConfigurationError("the port must be between 0 and 65535")
        }
        if let level = value(logLevel, "HERALD_LOG_LEVEL") {
            guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
                throw ConfigurationError("unknown log level '\(level)'; use trace, debug, info, notice, warning, error or critical")
            }
            configuration.logLevel = parsed
        }
        if let directory = value(dataDirectory, "HERALD_DATA_DIR") { configuration.dataDirectory = directory }
        configuration.databaseURL = value(databaseURL, "DATABASE_URL")
        configuration.readDatabaseURL = value(readDatabaseURL, "HERALD_READ_DATABASE_URL")
        configuration.directDatabaseURL = value(nil, "HERALD_DIRECT_DATABASE_URL")
        if let text = value(nil, "HERALD_DB_PREPARED_STATEMENTS") {
            guard ["on", "off"].contains(text) else { throw ConfigurationError("HERALD_DB_PREPARED_STATEMENTS must be on or off, got '\(text)'") }
            configuration.databasePreparedStatements = text == "on"
        }
        if let text = value(nil, "HERALD_READ_MAX_LAG") {
            guard let lag = Self.duration(text), lag >= .seconds(1) else {
                throw ConfigurationError("HERALD_READ_MAX_LAG must be a duration of at least 1s such as 5s, got '\(text)'")
            }
            configuration.readMaximumLag = lag
        }
        configuration.usesPGEnvironment = serverSelectingPGVariables.contains { !(environment[$0] ?? "").isEmpty }
        if let size = try integer(databasePoolSize, "HERALD_DB_POOL_SIZE") { configuration.databasePoolSize = size }
        guard (1...500).contains(configuration.databasePoolSize) else {
            throw ConfigurationError("the database pool size must be between 1 and 500")
        }
        if let text = environment["HERALD_DB_STATEMENT_TIMEOUT"], !text.isEmpty {
            guard let timeout = Self.duration(text) else {
                throw ConfigurationError("HERALD_DB_STATEMENT_TIMEOUT must be a duration such as 30s (0 for none), got '\(text)'")
            }
            configuration.databaseStatementTimeout = timeout == .zero ? nil : timeout
        }
        for (variable, limit) in [
            ("HERALD_RATE_LIMIT_SESSION", \RequestLimits.Settings.session), ("HERALD_RATE_LIMIT_ADDRESS", \.address),
            ("HERALD_RATE_LIMIT_AUTH_FAILURES", \.failedAuthentication),
        ] {
            guard let text = environment[variable], !text.isEmpty else { continue }
            if text == "off" {
                configuration.rateLimits[keyPath: limit] = nil
                continue
            }
            guard let parsed = RateLimit(parsing: text) else {
                throw ConfigurationError("\(variable) must be RATE/BURST such as 20/100 (requests a second, at once) or off, got '\(text)'")
            }
            configuration.rateLimits[keyPath: limit] = parsed
        }
        if let size = try integer(nil, "HERALD_FANOUT_BATCH_SIZE") { configuration.fanoutBatchSize = size }
        if let size = try integer(nil, "HERALD_PUSH_BATCH_SIZE") { configuration.pushBatchSize = size }
        guard (1...50_000).contains(configuration.pushBatchSize) else {
            throw ConfigurationError("the push batch size must be between 1 and 50000")
        }
        if let streams = try integer(nil, "HERALD_PUSH_STREAMS") { configuration.pushStreams = streams }
        guard (1...1_000).contains(configuration.pushStreams) else {
            throw ConfigurationError("the pushes in flight per APNs or FCM connection and in the Web Push lane must be between 1 and 1000")
        }
        guard (1...100_000).contains(configuration.fanoutBatchSize) else {
            throw ConfigurationError("the fan-out batch size must be between 1 and 100000")
        }
        if let text = environment["HERALD_CHANGE_RETENTION"], !text.isEmpty {
            guard let retention = Self.duration(text), retention >= .seconds(60) else {
                throw ConfigurationError(
                    "HERALD_CHANGE_RETENTION must be a duration of at least a minute such as 30d, 12h, 90m or 3600s, got '\(text)'"
                )
            }
            configuration.changeRetention = retention
        }
        if let gap = try integer(nil, "HERALD_SYNC_HUGE_GAP") { configuration.syncHugeGap = gap }
        guard (1...100_000).contains(configuration.syncHugeGap) else {
            throw ConfigurationError("the sync huge-gap threshold must be between 1 and 100000")
        }
        if let token = environment["HERALD_ADMIN_TOKEN"], !token.isEmpty {
            // A short token can be guessed; the generated one is 64 hex characters.
            guard token.count >= minimumAdminTokenLength else {
                throw ConfigurationError(
                    "HERALD_ADMIN_TOKEN must be at least \(minimumAdminTokenLength) characters (for example `openssl rand -hex 32`)"
                )
            }
            configuration.adminToken = token
        }
        if let key = environment["HERALD_SECRET_KEY"], !key.isEmpty {
            guard key.count == 64, key.allSatisfy(\.isHexDigit) else {
                throw ConfigurationError("HERALD_SECRET_KEY must be 64 hex characters (32 bytes), e.g. from `openssl rand -hex 32`")
            }
            configuration.secretKey = key
        }
        configuration.apnsURL = value(nil, "HERALD_APNS_URL")
        configuration.apnsCAFile = value(nil, "HERALD_APNS_CA_FILE")
        if let text = value(nil, "HERALD_FCM_URL") {
            // Messages go over HTTP/2 with TLS (ALPN h2), as FCM takes them; so must a proxy.
            guard let url = URL(string: text), url.scheme == "https", url.host?.isEmpty == false else {
                throw ConfigurationError("HERALD_FCM_URL must be an https URL (HTTP/2) such as https://fcm.googleapis.com, got '\(text)'")
            }
            configuration.fcmURL = url
        }
        configuration.pushCAFile = value(nil, "HERALD_PUSH_CA_FILE")
        if let text = value(nil, "HERALD_WEBPUSH_HOSTS") {
            let domains = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard !domains.isEmpty, domains.allSatisfy({ $0.allSatisfy { $0.isLetter || $0.isNumber || ".-:[]".contains($0) } }) else {
                throw ConfigurationError("HERALD_WEBPUSH_HOSTS must list host names separated by commas, got '\(text)'")
            }
            configuration.webPushHosts = WebPushHosts(domains: domains)
        }
        if let text = value(nil, "HERALD_CORS_ORIGINS") {
            configuration.crossOrigin = try CrossOriginPolicy(parsing: text)
        }
        if let subject = value(nil, "HERALD_VAPID_SUBJECT") {
            // Apple's push service refuses a contact at localhost.
            guard subject.hasPrefix("mailto:") || subject.hasPrefix("https:"), !subject.lowercased().contains("localhost") else {
                throw ConfigurationError(
                    "HERALD_VAPID_SUBJECT must be a mailto: or https: URL where the operator can be reached (not localhost), got '\(subject)'"
                )
            }
            configuration.vapidSubject = subject
        }
        if let text = environment["HERALD_REFRESH_MIN_INTERVAL"], !text.isEmpty {
            guard let interval = Self.duration(text) else {
                throw ConfigurationError("HERALD_REFRESH_MIN_INTERVAL must be a duration such as 60s or 5m, got '\(text)'")
            }
            configuration.refreshMinimumInterval = interval
        }
        if let text = environment["HERALD_PUSH_EXPIRATION"], !text.isEmpty {
            guard let expiration = Self.duration(text), expiration <= .seconds(30 * 86_400) else {
                throw ConfigurationError("HERALD_PUSH_EXPIRATION must be a duration of at most 30d such as 1h, got '\(text)'")
            }
            configuration.pushExpiration = expiration
        }
        if let text = environment["HERALD_PUSH_LEASE"], !text.isEmpty {
            guard let lease = Self.duration(text), lease >= .seconds(1) else {
                throw ConfigurationError("HERALD_PUSH_LEASE must be a duration of at least 1s such as 60s, got '\(text)'")
            }
            configuration.pushLease = lease
        }
        if let text = environment["HERALD_SCHEDULE_LEASE"], !text.isEmpty {
            guard let lease = Self.duration(text), lease >= .seconds(1) else {
                throw ConfigurationError("HERALD_SCHEDULE_LEASE must be a duration of at least 1s such as 60s, got '\(text)'")
            }
            configuration.scheduleLease = lease
        }
        if let text = environment["HERALD_WEBHOOK_TIMEOUT"], !text.isEmpty {
            guard let timeout = Self.duration(text), timeout >= .seconds(1), timeout <= .seconds(60) else {
                throw ConfigurationError("HERALD_WEBHOOK_TIMEOUT must be a duration from 1s to 60s such as 10s, got '\(text)'")
            }
            configuration.webhookTimeout = timeout
        }
        if let text = environment["HERALD_HTTP_IDLE_TIMEOUT"], !text.isEmpty {
            guard let timeout = Self.duration(text), timeout >= .seconds(1) else {
                throw ConfigurationError("HERALD_HTTP_IDLE_TIMEOUT must be a duration of at least 1s such as 75s, got '\(text)'")
            }
            configuration.httpIdleTimeout = timeout
        }
        try resolveStream(&configuration.stream, environment: environment)
        if let text = value(nil, "HERALD_MEMORY_ANSWERS") {
            guard ["on", "off"].contains(text) else { throw ConfigurationError("HERALD_MEMORY_ANSWERS must be on or off, got '\(text)'") }
            configuration.memory.enabled = text == "on"
        }
        if let text = value(nil, "HERALD_MEMORY_ENTRIES") {
            guard let entries = Int(text), (1_000...10_000_000).contains(entries) else {
                throw ConfigurationError("HERALD_MEMORY_ENTRIES must be a number from 1000 to 10000000, got '\(text)'")
            }
            configuration.memory.capacity = entries
        }
        if let text = value(nil, "HERALD_LONG_POLL_MAX_PER_USER") {
            guard let count = Int(text), (1...1_000).contains(count) else {
                throw ConfigurationError("HERALD_LONG_POLL_MAX_PER_USER must be a number from 1 to 1000, got '\(text)'")
            }
            configuration.memory.maximumWaitsPerUser = count
        }
        if let text = value(nil, "HERALD_LONG_POLL_MAX") {
            guard let count = Int(text), (1...1_000_000).contains(count) else {
                throw ConfigurationError("HERALD_LONG_POLL_MAX must be a number from 1 to 1000000, got '\(text)'")
            }
            configuration.memory.maximumWaits = count
        }
        if let appID = value(nil, "HERALD_APP_ID") {
            guard appID.count <= 128 else { throw ConfigurationError("HERALD_APP_ID must be at most 128 characters") }
            configuration.appID = appID
        }
        if let badge = value(nil, "HERALD_PUSH_BADGE") {
            guard ["on", "off"].contains(badge) else { throw ConfigurationError("HERALD_PUSH_BADGE must be on or off, got '\(badge)'") }
            configuration.pushBadge = badge == "on"
        }
        if let text = value(nil, "HERALD_PUSH_LOG_PAYLOADS") {
            guard ["on", "off"].contains(text) else { throw ConfigurationError("HERALD_PUSH_LOG_PAYLOADS must be on or off, got '\(text)'") }
            configuration.logPushPayloads = text == "on"
        }
        if let cap = try integer(nil, "HERALD_PUSH_BADGE_CAP") {
            guard cap >= 1 else { throw ConfigurationError("HERALD_PUSH_BADGE_CAP must be at least 1") }
            configuration.pushBadgeCap = cap
        }
        if let text = value(nil, "HERALD_PUSH_NO_DETAIL_TEXT") {
            guard text.count <= 200 else { throw ConfigurationError("HERALD_PUSH_NO_DETAIL_TEXT must be at most 200 characters") }
            configuration.noDetailText = text
        }
        configuration.migrationsDirectory = value(migrationsDirectory, "HERALD_SQL_DIR")
        configuration.fixturesDirectory = value(nil, "HERALD_FIXTURES_DIR")
        if let text = value(nil, "HERALD_CONSOLE") {
            guard ["on", "off"].contains(text) else { throw ConfigurationError("HERALD_CONSOLE must be on or off, got '\(text)'") }
            configuration.consoleEnabled = text == "on"
        }
        configuration.consoleDirectory = value(nil, "HERALD_CONSOLE_DIR")
        configuration.webDirectory = value(nil, "HERALD_WEB_DIR")
        if let text = value(nil, "HERALD_DEMO") {
            guard text == "on" || text == "off" else { throw ConfigurationError("HERALD_DEMO must be on or off, got '\(text)'") }
            configuration.demoEnabled = text == "on"
        }
        if let text = value(nil, "HERALD_CONSOLE_SESSION_LIFETIME") {
            guard let lifetime = Self.duration(text), lifetime >= .seconds(60) else {
                throw ConfigurationError("HERALD_CONSOLE_SESSION_LIFETIME must be a duration of at least 60s such as 12h, got '\(text)'")
            }
            configuration.consoleSessionLifetime = lifetime
        }
        return configuration
    }

    static func resolveStream(_ stream: inout LiveSettings, environment: [String: String]) throws {
        func duration(_ variable: String, example: String, minimum: Duration = .seconds(1)) throws -> Duration? {
            guard let text = environment[variable], !text.isEmpty else { return nil }
            guard let value = Self.duration(text), value >= minimum else {
                throw ConfigurationError("\(variable) must be a duration of at least \(minimum) such as \(example), got '\(text)'")
            }
            return value
        }
        if let text = environment["HERALD_PUSH_MULTI_DEVICE"], !text.isEmpty {
            guard let policy = MultiDevicePolicy(rawValue: text) else {
                throw ConfigurationError("HERALD_PUSH_MULTI_DEVICE must be all_offline or any_offline, got '\(text)'")
            }
            stream.multiDevice = policy
        }
        if let interval = try duration("HERALD_STREAM_PING_INTERVAL", example: "30s") { stream.pingInterval = interval }
        if let text = environment["HERALD_STREAM_QUEUE_LIMIT"], !text.isEmpty {
            guard let bytes = Int(text), bytes >= 4096 else {
                throw ConfigurationError("HERALD_STREAM_QUEUE_LIMIT must be a number of bytes of at least 4096, got '\(text)'")
            }
            stream.queueBytes = bytes
        }
        if let text = environment["HERALD_STREAM_MAX_PER_USER"], !text.isEmpty {
            guard let count = Int(text), (1...1000).contains(count) else {
                throw ConfigurationError("HERALD_STREAM_MAX_PER_USER must be a number from 1 to 1000, got '\(text)'")
            }
            stream.maximumStreamsPerUser = count
        }
        if let heartbeat = try duration("HERALD_PRESENCE_HEARTBEAT", example: "10s") { stream.heartbeat = heartbeat }
        if let ttl = try duration("HERALD_PRESENCE_TTL", example: "30s") { stream.presenceTTL = ttl }
        guard stream.presenceTTL > stream.heartbeat else {
            throw ConfigurationError(
                "HERALD_PRESENCE_TTL (\(stream.presenceTTL)) must be longer than HERALD_PRESENCE_HEARTBEAT (\(stream.heartbeat))"
            )
        }
    }

    /// `30d`, `12h`, `90m`, `3600s` or plain seconds.
    public static func duration(_ text: String) -> Duration? {
        let units: [Character: Int] = ["d": 86_400, "h": 3_600, "m": 60, "s": 1]
        var digits = Substring(text)
        var unit = 1
        if let last = digits.last, let seconds = units[last] {
            unit = seconds
            digits = digits.dropLast()
        }
        guard let value = Int(digits), value >= 0, value <= Int(Int32.max) else { return nil }
        return .seconds(value * unit)
    }

    /// True when Herald should run its own cluster.
    public var usesEmbeddedDatabase: Bool {
        databaseURL == nil && !usesPGEnvironment
    }
}

/// A setting was given a value Herald cannot use.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
