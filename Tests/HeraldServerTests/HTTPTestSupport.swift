import Foundation
import HeraldCore
import HeraldServer
import HeraldServices
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import Postgres
import Prometheus
import Testing

/// Herald's dependencies on a test database, with the repository's migrations and a fresh metrics
/// registry (and `secrets` sealing APNs credentials, for the routes that store them).
func heraldDependencies(_ db: TestDatabase, adminToken: String?, secrets: SecretBox? = nil) throws -> HeraldApplication.Dependencies {
    HeraldApplication.Dependencies(
        client: db.client,
        migrator: Migrator(client: db.client, migrations: try TestPostgres.repositoryMigrations()),
        metricsRegistry: PrometheusCollectorRegistry(),
        adminToken: adminToken,
        secrets: secrets
    )
}

/// Herald's router on a test database, as the HTTP tests drive it.
func heraldApplication(_ db: TestDatabase, adminToken: String?) throws -> some ApplicationProtocol {
    Application(router: HeraldApplication.buildRouter(try heraldDependencies(db, adminToken: adminToken)).router)
}

/// Herald with live streams and the change notifier — its listener on `listenerConninfo` (the
/// primary's own server), pinging every 200 ms — on a loopback port, reading on `replica` when given;
/// `body` runs once memory answers.
func withMemoryApplication(
    client: PostgresClient,
    listenerConninfo: String,
    listenerName: String = "herald-live-test",
    adminToken: String,
    sync: SyncSettings = SyncSettings(),
    replica: ReadReplica? = nil,
    _ body: @escaping @Sendable (_ client: any TestClientProtocol, _ notifier: ChangeNotifier) async throws -> Void
) async throws {
    var logger = Logger(label: "test.memory")
    logger.logLevel = .warning
    var settings = ChangeNotifier.Settings()
    settings.pingInterval = .milliseconds(200)
    let notifier = ChangeNotifier(client: client, settings: settings, logger: logger)
    let hub = LiveHub(
        client: client,
        settings: LiveSettings(),
        listener: PostgresListener(conninfo: listenerConninfo, channels: [LiveHint.channel], applicationName: listenerName, logger: logger),
        notifier: notifier,
        logger: logger
    )
    let dependencies = HeraldApplication.Dependencies(
        client: client,
        migrator: Migrator(client: client, migrations: try TestPostgres.repositoryMigrations()),
        metricsRegistry: PrometheusCollectorRegistry(),
        adminToken: adminToken,
        sync: sync,
        hub: hub,
        replica: replica,
        notifier: notifier
    )
    let app = HeraldApplication.build(dependencies, host: "127.0.0.1", port: 0, logger: logger, services: [hub, notifier])
    try await app.test(.live) { client in
        try await waitUntil("memory to answer") { notifier.isAnswering }
        try await body(client, notifier)
    }
}

/// JSON request headers, with a bearer token when given.
func jsonHeaders(bearer token: String?) -> HTTPFields {
    var fields = HTTPFields()
    fields[.contentType] = "application/json"
    if let token { fields[.authorization] = "Bearer \(token)" }
    return fields
}

/// The response body as a JSON object.
func jsonObject(_ response: TestResponse) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any])
}

/// `error.code` of an error response.
func errorCode(_ response: TestResponse) throws -> String? {
    (try jsonObject(response)["error"] as? [String: Any])?["code"] as? String
}

extension Template {
    /// The tests' template `plain`: one required string variable, `title`, shown as the data's title
    /// (the test support's, which the store tests send with too).
    static let plain = StoreWorld.template
}

/// Sends the plain template's notification titled `title` to `users` in the `feed` channel through
/// the store, as the admin API does (its transaction writes the push outboxes); returns its id.
@discardableResult
func sendThroughStore(_ db: TestDatabase, _ title: String, to users: [String], push: PushOptions = PushOptions()) async throws -> Int64 {
    let template = try #require(try await TemplateStore(client: db.client).get("plain"))
    let content = try template.template.renderNotification(variables: ["title": .string(title)], userVariables: [:])
    let draft = NotificationDraft(
        channelURL: "feed",
        templateKey: "plain",
        templateVersion: template.version,
        variables: ["title": .string(title)],
        content: content,
        category: "news",
        tags: [],
        eventDeadline: nil,
        push: push,
        audience: .targets(users)
    )
    guard
        case .created(let stored, _, _) = try await NotificationStore(client: db.client).send(
            draft,
            idempotency: nil,
            respond: { _ in StoredResponse(status: 201, body: []) }
        )
    else {
        throw CancellationError()
    }
    return stored.id
}
