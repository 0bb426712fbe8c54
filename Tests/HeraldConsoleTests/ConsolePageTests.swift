import Foundation
import HTTPTypes
import HeraldConsole
import HeraldCore
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Postgres
import Testing

/// The console's pages over a real store: channels made, edited and deleted through forms, the
/// overview's counts, and the template preview.
@Suite("Console pages")
struct ConsolePageTests {
    @Test func channelsAreCreatedEditedAndDeletedThroughForms() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            try await ConsoleHarness.application(db).test(.router) { client in
                let browser = try await ConsoleBrowser.signIn(client, token: ConsoleHarness.adminToken)
                func save(_ path: String, _ fields: [String: String]) async throws -> TestResponse {
                    try await ConsoleBrowser.post(client, path, form: fields.merging(["csrf": browser.csrf]) { $1 }, headers: browser.headers)
                }
                let categories = "shipping | Shipping | default\nbilling | Billing"
                let created = try await save(
                    "/console/channels/new",
                    [
                        "url": "orders", "kind": "feed", "name": "Orders", "categories": categories, "retention": "24h",
                        "throttle_limit": "5", "throttle_window": "60m", "throttle_per": "category", "throttle_beyond": "drop",
                    ]
                )
                #expect(created.status == .seeOther)
                let stored = try #require(try await ChannelStore(client: db.client).get("orders")).channel
                #expect(
                    stored.categories == [
                        .init(id: "shipping", name: "Shipping", isDefault: true), .init(id: "billing", name: "Billing", isDefault: false),
                    ]
                )
                #expect(stored.retention == "1d")
                #expect(stored.throttle == Throttle(limit: 5, window: "1h", per: .category, beyond: .drop))
                let form = String(buffer: try await client.execute(uri: "/console/channels/orders", method: .get, headers: browser.headers).body)
                #expect(form.contains(#"name="throttle_limit" value="5""#) && form.contains(#"<option value="drop" selected>"#))

                // Problems come back on the form, with what was typed.
                let again = try await save("/console/channels/new", ["url": "orders", "kind": "feed"])
                #expect(again.status == .unprocessableContent)
                #expect(String(buffer: again.body).contains("exists already"))
                let badRetention = try await save("/console/channels/orders", ["kind": "feed", "name": "Renamed", "retention": "soon"])
                #expect(badRetention.status == .unprocessableContent)
                #expect(String(buffer: badRetention.body).contains(#"value="Renamed""#))
                let badThrottle = try await save("/console/channels/orders", ["kind": "feed", "throttle_limit": "5", "throttle_window": "9d"])
                #expect(badThrottle.status == .unprocessableContent && String(buffer: badThrottle.body).contains("throttle.window"))
                let badCategories = try await save("/console/channels/orders", ["kind": "feed", "categories": "just-an-id"])
                #expect(badCategories.status == .unprocessableContent)
                #expect(String(buffer: badCategories.body).contains("Categories, line 1"))
                let kindChange = try await save("/console/channels/orders", ["kind": "chat"])
                #expect(kindChange.status == .unprocessableContent)
                #expect(String(buffer: kindChange.body).contains("its kind cannot change"))
                #expect(try await ChannelStore(client: db.client).get("orders")?.channel == stored)

                // Markup in a name is shown, not run.
                #expect(try await save("/console/channels/orders", ["kind": "feed", "name": "<script>alert(1)</script>"]).status == .seeOther)
                let list = String(buffer: try await client.execute(uri: "/console/channels", method: .get, headers: browser.headers).body)
                #expect(list.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
                #expect(!list.contains("<script>alert(1)"))

                // The confirmation says what goes with the channel.
                _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
                _ = try await UserStore(client: db.client).upsert(id: "u2", nickname: nil, profileURL: nil)
                try await ConsoleHarness.send(db, channel: "orders", to: ["u1", "u2"])
                let confirm = String(
                    buffer: try await client.execute(uri: "/console/channels/orders/delete", method: .get, headers: browser.headers).body
                )
                #expect(confirm.contains(#"<strong id="delete-notifications">1</strong>"#))
                #expect(confirm.contains(#"<strong id="delete-copies">2</strong>"#))
                let deleted = try await save("/console/channels/orders/delete", [:])
                #expect(deleted.status == .seeOther)
                #expect(deleted.headers[.location] == "/console/channels?deleted=orders")
                #expect(try await ChannelStore(client: db.client).get("orders") == nil)
                #expect(try await client.execute(uri: "/console/channels/orders", method: .get, headers: browser.headers).status == .notFound)
            }
        }
    }

    @Test func theOverviewCountsWhatIsThere() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            _ = try await UserStore(client: db.client).upsert(id: "u1", nickname: nil, profileURL: nil)
            _ = try await ChannelStore(client: db.client).put(Channel(url: "news", kind: .feed, name: "News"))
            for _ in 0..<3 { try await ConsoleHarness.send(db, channel: "news", to: ["u1"]) }
            try await ConsoleHarness.application(db).test(.router) { client in
                let browser = try await ConsoleBrowser.signIn(client, token: ConsoleHarness.adminToken)
                let html = String(buffer: try await client.execute(uri: "/console", method: .get, headers: browser.headers).body)
                #expect(html.contains(#"<dd id="users">1</dd>"#))
                #expect(html.contains(#"<dd id="channels">1</dd>"#))
                #expect(html.contains(#"<dd id="sends">3</dd>"#))
                // The chart's bar for this hour, with its value for screen readers.
                #expect(html.contains("<title>3 sends, 0 h ago</title>"))
            }
        }
    }

    @Test func thePreviewRendersSamplesAndSaysWhatIsWrong() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let template = Template(
                key: "shipped",
                name: "Shipped",
                variables: [.init(name: "order", type: .string, required: true), .init(name: "days", type: .number)],
                data: .object(["title": .string("Order {{order}} in {{days}} days")]),
                pushBody: "Order {{order}} is coming",
                variants: [
                    "de": .init(data: .object(["title": .string("Bestellung {{order}} in {{days}} Tagen")])),
                    "de-CH": .init(pushBody: "Bestellig {{order}} chunnt"),
                ]
            )
            _ = try await TemplateStore(client: db.client).put(template)
            try await ConsoleHarness.application(db).test(.router) { client in
                let browser = try await ConsoleBrowser.signIn(client, token: ConsoleHarness.adminToken)
                func preview(_ query: String) async throws -> String {
                    String(
                        buffer: try await client.execute(uri: "/console/templates/shipped/preview?\(query)", method: .get, headers: browser.headers)
                            .body
                    )
                }
                let missing = try await preview("")
                #expect(missing.contains("order is required"))
                #expect(!missing.contains("preview-data"))
                let page = String(buffer: try await client.execute(uri: "/console/templates/shipped", method: .get, headers: browser.headers).body)
                #expect(page.contains("order is required"))
                let rendered = try await preview("v_order=A-1&v_days=3")
                #expect(rendered.contains("Order A-1 in 3 days"))
                #expect(rendered.contains("Order A-1 is coming"))
                #expect(rendered.contains(#"of 4096 bytes"#))
                let wrongType = String(
                    buffer: try await client.execute(
                        uri: "/console/templates/shipped?v_order=A-1&v_days=soon",
                        method: .get,
                        headers: browser.headers
                    ).body
                )
                #expect(wrongType.contains("days must be a number"))
                #expect(wrongType.contains(#"aria-invalid="true""#))

                // Translations: listed with the definition, and previewed per locale with their
                // fallbacks (de-CH takes de's data, and its own push body).
                #expect(page.contains("<h3>Translations</h3>") && page.contains(#"<option value="de-CH">de-CH</option>"#))
                let swiss = try await preview("v_order=A-1&v_days=3&locale=de-ch")
                #expect(swiss.contains("Bestellung A-1 in 3 Tagen") && swiss.contains("Bestellig A-1 chunnt"))
                let german = try await preview("v_order=A-1&v_days=3&locale=de")
                #expect(german.contains("Bestellung A-1 in 3 Tagen") && german.contains("Order A-1 is coming"))
                // A locale the template has no variant for previews its own content.
                #expect(try await preview("v_order=A-1&v_days=3&locale=fr").contains("Order A-1 in 3 days"))
            }
        }
    }
}
