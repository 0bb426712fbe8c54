import HeraldConsole
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting

/// The request context of the console's routes under test: the console alone on a router, with no
/// admin API around it.
struct ConsoleTestContext: ConsoleRequestContext {
    var coreContext: CoreRequestContextStorage

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    var clientAddress: String? { nil }
}

enum ConsoleHarness {
    static let adminToken = "console-admin-token-0123456789abcdef"

    /// The admin API's side of the console's writes, as an API that accepts everything answers. (The
    /// console wired to the real API is tested in HeraldServerTests.)
    static let actions = ConsoleActions(
        sendNotification: { _ in .init(status: 201, body: Array(#"{"id":"1"}"#.utf8)) },
        scheduleSend: { _ in .init(status: 201, body: Array(#"{"id":"1"}"#.utf8)) },
        cancelScheduledSend: { _ in .init(status: 200, body: Array("{}".utf8)) },
        eraseUser: { _ in .init(status: 202, body: Array("{}".utf8)) },
        putCredential: { _, _ in .init(status: 201, body: Array("{}".utf8)) },
        deleteCredential: { _ in .init(status: 204, body: []) },
        putFCMCredential: { _, _ in .init(status: 201, body: Array("{}".utf8)) },
        deleteFCMCredential: { _ in .init(status: 204, body: []) },
        webPushKey: { .init(status: 200, body: Array(#"{"public_key":"BPublicKeyOfTheHarness"}"#.utf8)) },
        putWebPushKey: { _ in .init(status: 200, body: Array(#"{"public_key":"BPublicKeyOfTheHarness"}"#.utf8)) },
        putTopic: { _, _ in .init(status: 201, body: Array("{}".utf8)) },
        changeSubscribers: { _, _, _ in .init(status: 200, body: Array(#"{"added":1}"#.utf8)) },
        loadFixtures: { _ in ([], nil) }
    )

    /// The console's routes on a router of their own, over `db`'s store.
    static func application(
        _ db: TestDatabase,
        adminToken: String = adminToken
    ) async throws
        -> some ApplicationProtocol
    {
        let site = try await ConsoleSite.load(ConsoleSettings(directory: TestPostgres.repositoryRoot() + "/console"))
        let router = Router(context: ConsoleTestContext.self)
        ConsoleRoutes<ConsoleTestContext>(site: site, client: db.client, adminToken: adminToken, actions: actions).register(on: router)
        return Application(router: router)
    }

    /// A targeted send through the store, as the admin API makes one.
    static func send(_ db: TestDatabase, channel: String, to users: [String], title: String = "Hi") async throws {
        _ = try await TemplateStore(client: db.client).put(StoreWorld.template)
        try await StoreWorld.send(title, to: .targets(users), in: channel, category: "", on: db)
    }
}
