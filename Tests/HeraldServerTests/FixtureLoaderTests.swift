import Foundation
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Postgres
import Testing

@Suite("Fixtures")
struct FixtureLoaderTests {
    func directory(_ files: [String: String]) throws -> String {
        let path = NSTemporaryDirectory() + "herald-fixtures-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path + "/more", withIntermediateDirectories: true)
        for (name, content) in files {
            try content.write(toFile: (path as NSString).appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return path
    }

    static let channels =
        #"{"channels":[{"channel_url":"orders","kind":"feed","categories":[{"id":"shipping","name":"Shipping","is_default":true}]},{"channel_url":"support","kind":"chat"}]}"#
    static let templates =
        #"{"templates":[{"key":"order.shipped","variables":[{"name":"order_id","type":"string","required":true}],"data":{"title":"Order {{order_id}} shipped"}}]}"#

    func count(_ table: String, _ client: PostgresClient) async throws -> Int {
        try await client.query("SELECT count(*) FROM \(unescaped: table)").first?.decode(Int.self) ?? -1
    }

    @Test func loadsThenReportsUnchangedThenVersionsAChangedTemplate() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let path = try directory(["a-channels.json": Self.channels, "more/templates.json": Self.templates, "notes.txt": "ignored"])
            defer { try? FileManager.default.removeItem(atPath: path) }
            let loader = FixtureLoader(client: db.client)

            let first = try await loader.load(directory: path)
            #expect(first.items.map(\.outcome) == ["created", "created", "created"])
            #expect(first.items.map(\.id) == ["orders", "support", "order.shipped v1"])

            let second = try await loader.load(directory: path)
            #expect(second.isUnchanged)
            #expect(second.items.count == 3)

            try Self.templates.replacingOccurrences(of: "shipped\"}", with: "is on its way\"}")
                .write(toFile: path + "/more/templates.json", atomically: true, encoding: .utf8)
            let third = try await loader.load(directory: path)
            #expect(third.items.last == .init(kind: "template", id: "order.shipped v2", outcome: "updated"))
            // Version 1 is still there, unchanged, for notifications rendered with it.
            let versions = try await db.client.query("SELECT version, definition->'data'->>'title' FROM templates ORDER BY version")
            #expect(try versions.map { try $0.decode((Int, String).self).1 } == ["Order {{order_id}} shipped", "Order {{order_id}} is on its way"])
        }
    }

    @Test func aBrokenFileAmongGoodOnesChangesNothingAndIsNamed() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let broken = #"{"templates":[{"key":"payment.failed","data":{"title":"Payment of {{amount}} failed"}}]}"#
            let path = try directory(["a-channels.json": Self.channels, "b-broken.json": broken, "c-templates.json": Self.templates])
            defer { try? FileManager.default.removeItem(atPath: path) }
            let problem = try await #require(throws: FixtureLoader.Problem.self) {
                try await FixtureLoader(client: db.client).load(directory: path)
            }
            #expect(problem.file == "b-broken.json")
            #expect(problem.path == "$.templates[0].data.title")
            #expect(problem.message.contains("{{amount}}"))
            #expect(try await count("channels", db.client) == 0)
            #expect(try await count("templates", db.client) == 0)

            // Malformed JSON and type errors name the path as well.
            let wrongKind = try directory(["x.json": #"{"channels":[{"channel_url":"a","kind":"group"}]}"#])
            defer { try? FileManager.default.removeItem(atPath: wrongKind) }
            let kindProblem = try await #require(throws: FixtureLoader.Problem.self) {
                try await FixtureLoader(client: db.client).load(directory: wrongKind)
            }
            #expect(kindProblem.file == "x.json")
            #expect(kindProblem.path == "$.channels[0].kind")

            // A failure while applying (a channel that would change kind) also rolls everything back.
            let good = try directory(["a.json": Self.channels])
            defer { try? FileManager.default.removeItem(atPath: good) }
            _ = try await FixtureLoader(client: db.client).load(directory: good)
            let flipped = try directory([
                "a.json": #"{"channels":[{"channel_url":"new-one","kind":"feed"},{"channel_url":"support","kind":"feed"}]}"#
            ])
            defer { try? FileManager.default.removeItem(atPath: flipped) }
            let flip = try await #require(throws: FixtureLoader.Problem.self) {
                try await FixtureLoader(client: db.client).load(directory: flipped)
            }
            #expect(flip.path == "$.channels[1].kind")
            #expect(try await count("channels", db.client) == 2)
        }
    }

    @Test func theDemoSetLoads() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let report = try await FixtureLoader(client: db.client).load(directory: TestPostgres.repositoryRoot() + "/fixtures")
            #expect(report.items.filter { $0.kind == "channel" }.count == 4)
            #expect(report.items.filter { $0.kind == "template" }.count == 6)
            // The digest among them reads its batch.
            let digest = try #require(try await TemplateStore(client: db.client).get("support.messages")).template
            let burst = BatchContext(
                count: 3,
                first: ["agent": .string("Ana"), "text": .string("Hi")],
                latest: ["agent": .string("Ben"), "text": .string("Done")],
                items: [["agent": .string("Ana"), "text": .string("Hi")], ["agent": .string("Ben"), "text": .string("Done")]]
            )
            let rendered = try digest.render(["agent": .string("Ben"), "text": .string("Done"), "ticket_id": .string("T-1")], batch: burst)
            guard case .object(let fields) = rendered.data else {
                Issue.record("the data is not an object")
                return
            }
            #expect(fields["title"] == .string("3 new messages from Ben"))
            #expect(fields["recent"] == .string("Ana: Hi\nBen: Done\n"))
        }
    }
}
