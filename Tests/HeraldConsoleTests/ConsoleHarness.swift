import HeraldConsole
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Synchronization

/// The request context of the console's routes under test: the console alone on a router, with no
/// admin API around it.
struct ConsoleTestContext: ConsoleRequestContext {
    var coreContext: CoreRequestContextStorage

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    var clientAddress: String? { nil }
}

/// What the console asked the admin API to do through its `ConsoleActions`, recorded, with the
/// answers an API that accepts everything gives. (The console wired to the real API is tested in
/// HeraldServerTests.)
final class ActionLog: Sendable {
    private let recorded = Mutex<[String]>([])

    var calls: [String] { recorded.withLock { $0 } }

    private func record(_ call: String) {
        recorded.withLock { $0.append(call) }
    }

    var actions: ConsoleActions {
        ConsoleActions(
            sendNotification: { body in
                self.record("send \(String(decoding: body, as: UTF8.self))")
                return .init(status: 201, body: Array(#"{"id":"1"}"#.utf8))
            },
            eraseUser: { id in
                self.record("erase \(id)")
                return .init(status: 202, body: Array("{}".utf8))
            },
            putCredential: { name, _ in
                self.record("put credential \(name)")
                return .init(status: 201, body: Array("{}".utf8))
            },
            deleteCredential: { name in
                self.record("delete credential \(name)")
                return .init(status: 204, body: [])
            },
            loadFixtures: { files in
                self.record("load fixtures \(files.map(\.name).joined(separator: ","))")
                return ([], nil)
            }
        )
    }
}

enum ConsoleHarness {
    static let adminToken = "console-admin-token-0123456789abcdef"

    /// The console's routes on a router of their own, over `db`'s store.
    static func application(
        _ db: TestDatabase,
        adminToken: String = adminToken,
        log: ActionLog = ActionLog()
    ) async throws
        -> some ApplicationProtocol
    {
        let site = try await ConsoleSite.load(ConsoleSettings(directory: TestPostgres.repositoryRoot() + "/console"))
        let router = Router(context: ConsoleTestContext.self)
        ConsoleRoutes<ConsoleTestContext>(site: site, client: db.client, adminToken: adminToken, actions: log.actions).register(on: router)
        return Application(router: router)
    }

    /// A targeted send through the store, as the admin API makes one.
    static func send(_ db: TestDatabase, channel: String, to users: [String], title: String = "Hi") async throws {
        _ = try await TemplateStore(client: db.client).put(StoreWorld.template)
        try await StoreWorld.send(title, to: .targets(users), in: channel, category: "", on: db)
    }
}
