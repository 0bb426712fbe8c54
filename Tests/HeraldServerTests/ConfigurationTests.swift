import Foundation
import HeraldCore
import HeraldServer
import Logging
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    @Test func defaultsUseTheEmbeddedDatabase() throws {
        let configuration = try HeraldConfiguration.resolve(environment: [:])
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(configuration.dataDirectory == ".herald")
        #expect(configuration.databasePoolSize == 10)
        #expect(configuration.usesEmbeddedDatabase)
        #expect(configuration.adminToken == nil)
    }

    @Test func flagsWinOverEnvironment() throws {
        let environment = ["HERALD_PORT": "9000", "HERALD_HOST": "0.0.0.0", "HERALD_LOG_LEVEL": "debug", "HERALD_DB_POOL_SIZE": "3"]
        let fromEnvironment = try HeraldConfiguration.resolve(environment: environment)
        #expect(fromEnvironment.port == 9000)
        #expect(fromEnvironment.host == "0.0.0.0")
        #expect(fromEnvironment.logLevel == .debug)
        #expect(fromEnvironment.databasePoolSize == 3)
        let fromFlags = try HeraldConfiguration.resolve(host: "::1", port: 7000, logLevel: "error", databasePoolSize: 5, environment: environment)
        #expect(fromFlags.port == 7000)
        #expect(fromFlags.host == "::1")
        #expect(fromFlags.logLevel == .error)
        #expect(fromFlags.databasePoolSize == 5)
    }

    @Test func backgroundWorkAndSyncSettings() throws {
        let defaults = try HeraldConfiguration.resolve(environment: [:])
        #expect(defaults.fanoutBatchSize == 10_000)
        #expect(defaults.syncHugeGap == 300)
        #expect(defaults.changeRetention == .seconds(30 * 24 * 3600))
        let set = try HeraldConfiguration.resolve(environment: [
            "HERALD_FANOUT_BATCH_SIZE": "500", "HERALD_SYNC_HUGE_GAP": "50", "HERALD_CHANGE_RETENTION": "12h",
        ])
        #expect(set.fanoutBatchSize == 500)
        #expect(set.syncHugeGap == 50)
        #expect(set.changeRetention == .seconds(12 * 3600))
        #expect(try HeraldConfiguration.resolve(environment: ["HERALD_CHANGE_RETENTION": "3600"]).changeRetention == .seconds(3600))
        for (name, value) in [
            ("HERALD_FANOUT_BATCH_SIZE", "0"), ("HERALD_SYNC_HUGE_GAP", "-1"), ("HERALD_CHANGE_RETENTION", "soon"),
            ("HERALD_CHANGE_RETENTION", "30s"), ("HERALD_FANOUT_BATCH_SIZE", "many"),
        ] {
            #expect(throws: ConfigurationError.self, "\(name)=\(value)") { try HeraldConfiguration.resolve(environment: [name: value]) }
        }
    }

    @Test func dispatcherPace() throws {
        let defaults = try HeraldConfiguration.resolve(environment: [:])
        #expect(defaults.pushBatchSize == 2000 && defaults.pushStreams == 300)
        let set = try HeraldConfiguration.resolve(environment: ["HERALD_PUSH_BATCH_SIZE": "500", "HERALD_PUSH_STREAMS": "100"])
        #expect(set.pushBatchSize == 500 && set.pushStreams == 100)
        for environment in [
            ["HERALD_PUSH_BATCH_SIZE": "0"], ["HERALD_PUSH_BATCH_SIZE": "50001"], ["HERALD_PUSH_STREAMS": "1001"], ["HERALD_PUSH_STREAMS": "some"],
        ] {
            #expect(throws: ConfigurationError.self, "\(environment)") { try HeraldConfiguration.resolve(environment: environment) }
        }
    }

    @Test func httpIdleTimeout() throws {
        #expect(try HeraldConfiguration.resolve(environment: [:]).httpIdleTimeout == .seconds(75))
        #expect(try HeraldConfiguration.resolve(environment: ["HERALD_HTTP_IDLE_TIMEOUT": "5m"]).httpIdleTimeout == .seconds(300))
        for value in ["0s", "never", "-5"] {
            #expect(throws: ConfigurationError.self, "\(value)") {
                try HeraldConfiguration.resolve(environment: ["HERALD_HTTP_IDLE_TIMEOUT": value])
            }
        }
    }

    @Test func streamAndPresenceSettings() throws {
        let defaults = try HeraldConfiguration.resolve(environment: [:]).stream
        #expect(defaults.multiDevice == .allOffline)
        #expect(defaults.pingInterval == .seconds(30))
        #expect(defaults.heartbeat == .seconds(10) && defaults.presenceTTL == .seconds(30))
        let set = try HeraldConfiguration.resolve(environment: [
            "HERALD_PUSH_MULTI_DEVICE": "any_offline", "HERALD_STREAM_PING_INTERVAL": "15s", "HERALD_STREAM_QUEUE_LIMIT": "65536",
            "HERALD_PRESENCE_HEARTBEAT": "2s", "HERALD_PRESENCE_TTL": "6s",
        ]).stream
        #expect(set.multiDevice == .anyOffline)
        #expect(set.pingInterval == .seconds(15))
        #expect(set.queueBytes == 65536)
        #expect(set.heartbeat == .seconds(2) && set.presenceTTL == .seconds(6))
        for environment in [
            ["HERALD_PUSH_MULTI_DEVICE": "some_offline"], ["HERALD_STREAM_PING_INTERVAL": "0s"], ["HERALD_STREAM_QUEUE_LIMIT": "100"],
            ["HERALD_PRESENCE_HEARTBEAT": "10s", "HERALD_PRESENCE_TTL": "5s"], ["HERALD_PRESENCE_TTL": "later"],
        ] {
            #expect(throws: ConfigurationError.self, "\(environment)") { try HeraldConfiguration.resolve(environment: environment) }
        }
    }

    @Test func hardeningSettings() throws {
        let defaults = try HeraldConfiguration.resolve(environment: [:])
        #expect(defaults.databaseStatementTimeout == .seconds(30))
        #expect(defaults.rateLimits == RequestLimits.Settings())
        #expect(defaults.stream.maximumStreamsPerUser == 10)
        #expect(!defaults.logPushPayloads)
        let set = try HeraldConfiguration.resolve(environment: [
            "HERALD_DB_STATEMENT_TIMEOUT": "2m", "HERALD_RATE_LIMIT_SESSION": "5/10", "HERALD_RATE_LIMIT_ADDRESS": "off",
            "HERALD_RATE_LIMIT_AUTH_FAILURES": "0.5/4", "HERALD_STREAM_MAX_PER_USER": "3", "HERALD_PUSH_LOG_PAYLOADS": "on",
        ])
        #expect(set.databaseStatementTimeout == .seconds(120))
        #expect(set.rateLimits.session == RateLimit(perSecond: 5, burst: 10))
        #expect(set.rateLimits.address == nil)
        #expect(set.rateLimits.failedAuthentication == RateLimit(perSecond: 0.5, burst: 4))
        #expect(set.stream.maximumStreamsPerUser == 3 && set.logPushPayloads)
        #expect(try HeraldConfiguration.resolve(environment: ["HERALD_DB_STATEMENT_TIMEOUT": "0"]).databaseStatementTimeout == nil)
        for environment in [
            ["HERALD_DB_STATEMENT_TIMEOUT": "soon"], ["HERALD_RATE_LIMIT_SESSION": "20"], ["HERALD_RATE_LIMIT_ADDRESS": "0/5"],
            ["HERALD_STREAM_MAX_PER_USER": "0"], ["HERALD_PUSH_LOG_PAYLOADS": "yes"],
        ] {
            #expect(throws: ConfigurationError.self, "\(environment)") { try HeraldConfiguration.resolve(environment: environment) }
        }
    }

    @Test func alertPushSettings() throws {
        let defaults = try HeraldConfiguration.resolve(environment: [:])
        #expect(defaults.appID == "herald" && defaults.pushBadge && defaults.pushBadgeCap == nil)
        let set = try HeraldConfiguration.resolve(environment: [
            "HERALD_APP_ID": "acme", "HERALD_PUSH_BADGE": "off", "HERALD_PUSH_BADGE_CAP": "99", "HERALD_PUSH_NO_DETAIL_TEXT": "New message",
        ])
        #expect(set.appID == "acme" && !set.pushBadge && set.pushBadgeCap == 99 && set.noDetailText == "New message")
        for environment in [["HERALD_PUSH_BADGE": "maybe"], ["HERALD_PUSH_BADGE_CAP": "0"], ["HERALD_PUSH_BADGE_CAP": "lots"]] {
            #expect(throws: ConfigurationError.self, "\(environment)") { try HeraldConfiguration.resolve(environment: environment) }
        }
    }

    @Test func pushServiceSettings() throws {
        let defaults = try HeraldConfiguration.resolve(environment: [:])
        #expect(defaults.fcmURL == nil && defaults.pushCAFile == nil && defaults.vapidSubject == nil)
        let set = try HeraldConfiguration.resolve(environment: [
            "HERALD_FCM_URL": "https://fcm.proxy.example:8443", "HERALD_PUSH_CA_FILE": "/etc/ssl/proxy.pem",
            "HERALD_VAPID_SUBJECT": "https://example.com/contact",
        ])
        #expect(set.fcmURL?.absoluteString == "https://fcm.proxy.example:8443")
        #expect(set.pushCAFile == "/etc/ssl/proxy.pem" && set.vapidSubject == "https://example.com/contact")
        for environment in [
            ["HERALD_FCM_URL": "fcm.googleapis.com"], ["HERALD_FCM_URL": "ftp://x"], ["HERALD_FCM_URL": "http://fcm.proxy.example"],
            ["HERALD_VAPID_SUBJECT": "ops@example.com"],
            ["HERALD_VAPID_SUBJECT": "mailto:admin@localhost"],
        ] {
            #expect(throws: ConfigurationError.self, "\(environment)") { try HeraldConfiguration.resolve(environment: environment) }
        }
    }

    @Test func databaseSelection() throws {
        let url = try HeraldConfiguration.resolve(environment: ["DATABASE_URL": "postgres://db/herald"])
        #expect(url.databaseURL == "postgres://db/herald")
        #expect(!url.usesEmbeddedDatabase)
        let pg = try HeraldConfiguration.resolve(environment: ["PGHOST": "db.internal"])
        #expect(pg.usesPGEnvironment)
        #expect(!pg.usesEmbeddedDatabase)
        // A password alone names no server: still the embedded default.
        #expect(try HeraldConfiguration.resolve(environment: ["PGPASSWORD": "x"]).usesEmbeddedDatabase)
        let token = String(repeating: "t0ken", count: 7)
        #expect(try HeraldConfiguration.resolve(environment: ["HERALD_ADMIN_TOKEN": token]).adminToken == token)
        // Shorter than 32 characters: refused, naming the setting.
        let short = #expect(throws: ConfigurationError.self) {
            try HeraldConfiguration.resolve(environment: ["HERALD_ADMIN_TOKEN": String(token.prefix(31))])
        }
        #expect(short?.description.contains("HERALD_ADMIN_TOKEN") == true)
    }

    @Test func badValuesAreRefusedWithTheirName() {
        #expect(throws: ConfigurationError.self) { try HeraldConfiguration.resolve(environment: ["HERALD_PORT": "eighty"]) }
        #expect(throws: ConfigurationError.self) { try HeraldConfiguration.resolve(port: 70_000, environment: [:]) }
        #expect(throws: ConfigurationError.self) { try HeraldConfiguration.resolve(environment: ["HERALD_DB_POOL_SIZE": "0"]) }
        do {
            _ = try HeraldConfiguration.resolve(environment: ["HERALD_PORT": "eighty"])
        } catch {
            #expect("\(error)".contains("HERALD_PORT"))
        }
    }
}
