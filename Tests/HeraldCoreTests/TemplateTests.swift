import Foundation
import HeraldCore
import Testing

@Suite("Templates")
struct TemplateTests {
    func decode(_ json: String) throws -> Template {
        try JSONDecoder().decode(Template.self, from: Data(json.utf8))
    }

    static let orderShipped = #"""
        {
          "key": "order.shipped",
          "name": "Order shipped",
          "variables": [
            {"name": "order_id", "type": "string", "required": true},
            {"name": "carrier", "type": "string", "default": "DHL"},
            {"name": "items", "type": "number", "required": true},
            {"name": "gift", "type": "bool", "default": false},
            {"name": "tracking_url", "type": "url"}
          ],
          "data": {
            "title": "Order {{order_id}} is on its way",
            "body": "{{items}} item(s) with {{carrier}}{{#gift}} — gift wrapped{{/gift}}",
            "links": [{"href": "{{tracking_url}}"}],
            "priority": 2
          },
          "push_title": "Shipped: {{order_id}}",
          "category": "shipping"
        }
        """#

    @Test func rendersSharedValuesDefaultsAndSections() throws {
        let template = try decode(Self.orderShipped)
        try template.validate()
        let rendered = try template.render([
            "order_id": .string("A-1 <&>"), "items": .number(3), "gift": .bool(true),
            "tracking_url": .string("https://track.example.com/A-1"),
        ])
        guard case .object(let data) = rendered.data else {
            Issue.record("data must stay an object")
            return
        }
        // Values go in as text: nothing is HTML-escaped, numbers print as integers.
        #expect(data["title"] == .string("Order A-1 <&> is on its way"))
        #expect(data["body"] == .string("3 item(s) with DHL — gift wrapped"))
        #expect(data["links"] == .array([.object(["href": .string("https://track.example.com/A-1")])]))
        #expect(data["priority"] == .number(2))
        #expect(rendered.pushTitle == "Shipped: A-1 <&>")
        #expect(rendered.pushBody == nil)
    }

    @Test func renderingErrorsNameTheVariable() throws {
        let template = try decode(Self.orderShipped)
        #expect(throws: TemplateProblem(path: "order_id", message: "is required")) {
            try template.render(["items": .number(1)])
        }
        #expect(throws: TemplateProblem(path: "items", message: "must be a number")) {
            try template.render(["order_id": .string("A"), "items": .string("three")])
        }
        #expect(throws: TemplateProblem(path: "coupon", message: "is not a variable of template 'order.shipped'")) {
            try template.render(["order_id": .string("A"), "items": .number(1), "coupon": .string("X")])
        }
        #expect(throws: TemplateProblem(path: "tracking_url", message: "must be an http(s) URL")) {
            try template.render(["order_id": .string("A"), "items": .number(1), "tracking_url": .string("not a url")])
        }
    }

    @Test func validationFindsUndeclaredPlaceholdersBadDefaultsAndSyntax() throws {
        var template = try decode(Self.orderShipped)
        template.pushBody = "Hi {{nickname}}"
        #expect(throws: TemplateProblem(path: "$.push_body", message: "uses {{nickname}}, which is not a declared variable")) {
            try template.validate()
        }
        template = try decode(Self.orderShipped)
        template.data = .object(["nested": .array([.string("{{#gift}}{{unknown_flag}}{{/gift}}")])])
        #expect(throws: TemplateProblem(path: "$.data.nested[0]", message: "uses {{unknown_flag}}, which is not a declared variable")) {
            try template.validate()
        }
        template = try decode(Self.orderShipped)
        template.variables[2].defaultValue = .string("many")
        #expect(throws: TemplateProblem(path: "$.variables[2].default", message: "must be a number")) {
            try template.validate()
        }
        template = try decode(Self.orderShipped)
        template.data = .object(["broken": .string("{{#open}} never closed")])
        // Said in the template's terms: no parser types, and the column of the text as written.
        #expect(throws: TemplateProblem(path: "$.data.broken", message: "is not a valid template: a section is not closed (line 1, column 23)")) {
            try template.validate()
        }
        template.data = .object(["broken": .string("line one\n{{#a}}x{{/b}}")])
        #expect(
            throws: TemplateProblem(
                path: "$.data.broken",
                message: "is not a valid template: a section is closed with another name than it was opened with (line 2, column 11)"
            )
        ) {
            try template.validate()
        }
        template = try decode(Self.orderShipped)
        template.key = "Order Shipped"
        #expect(throws: TemplateProblem.self) { try template.validate() }
        template = try decode(Self.orderShipped)
        template.variables.append(.init(name: "order_id", type: .string))
        #expect(throws: TemplateProblem(path: "$.variables[5].name", message: "'order_id' is declared twice")) {
            try template.validate()
        }
    }

    @Test func templatesReadTheRecipientsProfileUnderUser() throws {
        var template = try decode(Self.orderShipped)
        #expect(!template.readsUserFields)
        template.pushBody = "Hi {{user.properties.first_name}}{{#user.properties.team}} of {{name}}{{/user.properties.team}}, {{user.nickname}}"
        try template.validate()
        #expect(template.readsUserFields)
        let recipient = RecipientProfile(
            id: "u1",
            nickname: "Ada",
            profileURL: "",
            locale: "en",
            timeZone: "UTC",
            properties: ["first_name": .string("Ada"), "team": .object(["name": .string("Ops")]), "n": .number(2)]
        )
        let values: [String: JSONValue] = ["order_id": .string("A-1"), "items": .number(1)]
        #expect(try template.render(values, for: recipient).pushBody == "Hi Ada of Ops, Ada")
        // Without a recipient (the notification's own rendering) the fields are empty.
        #expect(try template.render(values).pushBody == "Hi , ")

        for (text, problem) in [
            ("{{user.email}}", "uses {{user.email}}: the user's fields are"),
            ("{{user}}", "uses {{user}}: the user's fields are"),
            ("{{user.properties}}", "uses {{user.properties}}: name a key of the properties"),
            // Inside a field's section a name is looked up among the variables.
            ("{{#user.nickname}}{{first}}{{/user.nickname}}", "uses {{first}}, which is not a declared variable"),
        ] {
            template.pushBody = text
            #expect(throws: TemplateProblem.self) { try template.validate() }
            do { try template.validate() } catch { #expect(error.message.hasPrefix(problem), "\(error.message)") }
        }
        // The "if set" idiom, and a field read in a variable's section, read the profile too.
        template.pushBody = "{{#user.nickname}}Hi {{user.nickname}} ({{order_id}}){{/user.nickname}}"
        try template.validate()
        #expect(try template.render(values, for: recipient).pushBody == "Hi Ada (A-1)")
        template.pushBody = "{{#gift}}For {{user.nickname}}{{/gift}}"
        try template.validate()
        #expect(template.readsUserFields)
        template.actions = [.init(id: "a", label: "{{#gift}}{{user.nickname}}{{/gift}}")]
        #expect(throws: TemplateProblem.self) { try template.validate() }
        template.actions = nil
        // A template that declares a variable `user` keeps it: nothing is read of the profile.
        template.variables.append(.init(name: "user", type: .string))
        template.pushBody = "Hi {{user}}"
        try template.validate()
        #expect(!template.readsUserFields)
        #expect(try template.render(values.merging(["user": .string("Bo")]) { $1 }, for: recipient).pushBody == "Hi Bo")
    }

    @Test func actionsRenderOncePerNotificationAndAreChecked() throws {
        var template = try decode(Self.orderShipped)
        template.actions = [.init(id: "track", label: "Track {{order_id}}", url: "{{tracking_url}}"), .init(id: "thanks", label: "Thanks")]
        try template.validate()
        let values: [String: JSONValue] = ["order_id": .string("A-1"), "items": .number(1), "tracking_url": .string("https://t.example.com/A-1")]
        #expect(
            try template.render(values).actions == [
                .init(id: "track", label: "Track A-1", url: "https://t.example.com/A-1"), .init(id: "thanks", label: "Thanks"),
            ]
        )
        // A URL that renders empty leaves the button to the app.
        #expect(try template.render(["order_id": .string("A-1"), "items": .number(1)]).actions.first?.url == nil)

        for (actions, path) in [
            ([Template.Action(id: "a b", label: "x")], "$.actions[0].id"),
            ([.init(id: "a", label: "x"), .init(id: "a", label: "y")], "$.actions[1].id"),
            ([.init(id: "a", label: "")], "$.actions[0].label"),
            ([.init(id: "a", label: "{{nope}}")], "$.actions[0].label"),
            ([.init(id: "a", label: "Hi {{user.nickname}}")], "$.actions[0].label"),
            ((0..<6).map { Template.Action(id: "a\($0)", label: "x") }, "$.actions"),
        ] {
            template.actions = actions
            #expect(throws: TemplateProblem.self) { try template.validate() }
            do { try template.validate() } catch { #expect(error.path == path, "\(error)") }
        }
        // A URL that renders to something else than http(s) is a problem of the send.
        template.actions = [.init(id: "go", label: "Go", url: "{{order_id}}")]
        try template.validate()
        #expect(throws: TemplateProblem.self) { try template.render(values) }
    }

    @Test func variantsTranslateWithFallbackToTheBaseLanguageThenTheTemplate() throws {
        var template = try decode(Self.orderShipped)
        template.actions = [.init(id: "track", label: "Track", url: "{{tracking_url}}"), .init(id: "thanks", label: "Thanks")]
        template.variants = [
            "de": .init(
                data: .object(["title": .string("Bestellung {{order_id}} ist unterwegs")]),
                pushTitle: "Versandt: {{order_id}}",
                actions: [.init(id: "track", label: "Verfolgen")]
            ),
            "pt": .init(pushTitle: "Enviado: {{order_id}}"),
            "pt-BR": .init(data: .object(["title": .string("Pedido {{order_id}} a caminho")])),
        ]
        try template.validate()
        #expect(template.variantTags == ["de", "pt", "pt-br"])

        // The locale itself, else its base language (a prefix ending before a hyphen), else none.
        for (locale, tag) in [
            ("de", "de"), ("DE-at", "de"), ("pt-BR", "pt-br"), ("pt-PT", "pt"), ("pt-br-x-test", "pt-br"), ("fr", nil), ("dex", nil),
            ("en-US", nil), (nil, nil),
        ] as [(String?, String?)] {
            #expect(Template.variantTag(for: locale, among: template.variantTags) == tag, "\(locale ?? "nil")")
        }

        let values: [String: JSONValue] = ["order_id": .string("A-1"), "items": .number(1)]
        let content = try template.renderNotification(
            variables: values,
            userVariables: ["ana": ["carrier": .string("Correios")], "bob": ["carrier": .string("UPS")]],
            locales: ["ana": "pt-BR"]
        )
        #expect(content.shared.pushTitle == "Shipped: A-1")
        let de = try #require(content.variants["de"])
        #expect(de.data == .object(["title": .string("Bestellung A-1 ist unterwegs")]))
        #expect(de.pushTitle == "Versandt: A-1")
        // An action a variant does not name keeps the template's label.
        #expect(de.actions.map(\.label) == ["Verfolgen", "Thanks"])
        // A field a variant leaves out is its base language's (pt-BR has no push title of its own),
        // else the template's.
        #expect(content.variants["pt-br"]?.pushTitle == "Enviado: A-1")
        #expect(content.variants["pt-br"]?.data["title"] == .string("Pedido A-1 a caminho"))
        #expect(content.variants["pt"]?.data == content.shared.data)
        // Users with their own variables render in their locale's variant.
        #expect(content.perUser["ana"]?.data == .object(["title": .string("Pedido A-1 a caminho")]))
        #expect(content.perUser["bob"]?.data["title"] == content.shared.data["title"])

        // A recipient of a broadcast renders in the variant of their profile's locale.
        template.variants?["de"]?.pushBody = "Hallo {{user.nickname}}"
        try template.validate()
        #expect(template.readsUserFields)
        let hans = RecipientProfile(id: "h", nickname: "Hans", profileURL: "", locale: "de-CH", timeZone: "UTC", properties: [:])
        #expect(try template.renderRecipient(variables: values, recipient: hans, parsed: template.parsedStrings()).pushBody == "Hallo Hans")

        for (variants, path) in [
            (["deutschland": Template.Variant()], "$.variants.deutschland"),
            (["d": Template.Variant()], "$.variants.d"),
            (["de": .init(), "DE": .init()], "$.variants.de"),
            (["de": .init(pushTitle: "{{nope}}")], "$.variants.de.push_title"),
            (["de": .init(data: .string("x"))], "$.variants.de.data"),
            (["de": .init(actions: [.init(id: "share", label: "Teilen")])], "$.variants.de.actions[0].id"),
            (["de": .init(actions: [.init(id: "track", label: "")])], "$.variants.de.actions[0].label"),
            (
                Dictionary(
                    uniqueKeysWithValues: (0..<31).map { ("l\(String(UnicodeScalar(97 + $0 % 26)!))\($0 / 26 == 0 ? "" : "-x")", Template.Variant()) }
                ),
                "$.variants"
            ),
        ] {
            template.variants = variants
            #expect(throws: TemplateProblem.self, "\(variants.keys.sorted())") { try template.validate() }
            do { try template.validate() } catch { #expect(error.path == path, "\(error)") }
        }
    }

    @Test func digestsRenderTheirBatchAndItsNamesAreChecked() throws {
        var template = Template(
            key: "likes",
            name: "Likes",
            variables: [.init(name: "actor", type: .string, required: true), .init(name: "photo", type: .string, defaultValue: .string("photo"))],
            data: .object([
                "title": .string("{{batch.first.actor}}{{#batch.several}} and {{batch.others}} others{{/batch.several}} liked your {{photo}}"),
                "recent": .string("{{#batch.items}}{{actor}}/{{photo}} {{/batch.items}}"),
                "latest": .string("{{batch.latest.actor}}"),
            ]),
            pushTitle: "{{batch.count}}"
        )
        try template.validate()
        #expect(!template.readsUserFields)
        // On its own (no batch), a batch of one: itself.
        let single = try template.render(["actor": .string("ann")])
        #expect(single.data == .object(["title": .string("ann liked your photo"), "recent": .string("ann/photo "), "latest": .string("ann")]))
        #expect(single.pushTitle == "1")
        let batch = BatchContext(
            count: 7,
            first: ["actor": .string("ann")],
            latest: ["actor": .string("cy")],
            items: [["actor": .string("bo"), "photo": .string("cat")], ["actor": .string("cy")]]
        )
        let rendered = try template.render(["actor": .string("cy")], batch: batch)
        #expect(
            rendered.data
                == .object(["title": .string("ann and 6 others liked your photo"), "recent": .string("bo/cat cy/photo "), "latest": .string("cy")])
        )
        #expect(rendered.pushTitle == "7")
        // A variable named batch is the template's own.
        template.variables.append(.init(name: "batch", type: .string))
        template.data = .object(["title": .string("{{batch}}")])
        template.pushTitle = nil
        try template.validate()
        #expect(try template.render(["actor": .string("a"), "batch": .string("mine")], batch: batch).data == .object(["title": .string("mine")]))

        for bad in ["{{batch.total}}", "{{batch}}", "{{batch.count.x}}", "{{batch.first.nope}}", "{{#batch.items}}{{nope}}{{/batch.items}}"] {
            let broken = Template(key: "bad", name: "Bad", variables: [.init(name: "actor", type: .string)], data: .object(["title": .string(bad)]))
            #expect(throws: TemplateProblem.self, "\(bad)") { try broken.validate() }
        }
        // A name read in the items' section may be the recipient's: the template renders per recipient.
        let personal = Template(
            key: "p",
            name: "P",
            variables: [],
            data: .object(["title": .string("{{#batch.items}}{{user.nickname}}{{/batch.items}}")])
        )
        try personal.validate()
        #expect(personal.readsUserFields)
    }

    @Test func validationBoundsSizesAndNesting() throws {
        var template = try decode(Self.orderShipped)
        template.name = String(repeating: "n", count: 256)
        #expect(throws: TemplateProblem(path: "$.name", message: "must be at most 255 characters")) { try template.validate() }
        template = try decode(Self.orderShipped)
        template.variables = (0..<101).map { .init(name: "v\($0)", type: .string) }
        #expect(throws: TemplateProblem(path: "$.variables", message: "at most 100 variables")) { try template.validate() }
        template = try decode(Self.orderShipped)
        var deep = JSONValue.string("x")
        for _ in 0..<17 { deep = .array([deep]) }
        template.data = .object(["deep": deep])
        #expect(throws: TemplateProblem(path: "$.data", message: "may nest at most 16 levels")) { try template.validate() }
        template = try decode(Self.orderShipped)
        template.data = .object(["big": .string(String(repeating: "b", count: 33_000))])
        #expect(throws: TemplateProblem(path: "$.data", message: "must encode to at most 32768 bytes")) { try template.validate() }
        template = try decode(Self.orderShipped)
        template.pushBody = String(repeating: "p", count: 1_001)
        #expect(throws: TemplateProblem(path: "$.push_body", message: "must be at most 1000 characters")) { try template.validate() }
        template = try decode(Self.orderShipped)
        template.category = ""
        #expect(throws: TemplateProblem(path: "$.category", message: "must be 1–64 characters")) { try template.validate() }
    }

    @Test func datetimeVariablesTakeRFC3339() throws {
        let template = Template(
            key: "digest",
            name: "Digest",
            variables: [.init(name: "since", type: .datetime, required: true)],
            data: .object(["text": .string("Since {{since}}")])
        )
        try template.validate()
        #expect(try template.render(["since": .string("2026-11-22T08:00:00Z")]).data == .object(["text": .string("Since 2026-11-22T08:00:00Z")]))
        #expect(
            try template.render(["since": .string("2026-11-22T08:00:00.250Z")]).data == .object(["text": .string("Since 2026-11-22T08:00:00.250Z")])
        )
        #expect(throws: TemplateProblem(path: "since", message: "must be an RFC 3339 date-time")) {
            try template.render(["since": .string("yesterday")])
        }
    }
}
