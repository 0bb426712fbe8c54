import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension ConsoleRoutes {
    static var templatesPageSize: Int { 50 }

    /// A fixtures file, as `herald fixtures load` reads them.
    struct FixturesForm: ConsoleForm {
        var csrf: String
        var file: Data?
    }

    func registerTemplates(on console: RouterGroup<Context>) {
        console.get("templates") { request, _ in
            let session = try await requireSession(request)
            return try await templatesPage(request, session: session, loaded: nil, problem: nil)
        }
        console.post("templates/fixtures") { request, context in
            let (form, session) = try await requireUpload(FixturesForm.self, request, context: context)
            guard let file = form.file, !file.isEmpty else {
                return try await templatesPage(request, session: session, loaded: nil, problem: "Choose a fixtures file (.json).")
            }
            let outcome = try await actions.loadFixtures([(name: "uploaded.json", bytes: Array(file))])
            return try await templatesPage(request, session: session, loaded: outcome.problem == nil ? outcome.items : nil, problem: outcome.problem)
        }
        console.get("templates/{key}") { request, context in
            let session = try await requireSession(request)
            let versions = try await templates.versions(try context.parameters.require("key"))
            guard let latest = versions.first else { throw ConsoleRefusal(.notFound, "There is no template with this key.") }
            let query = request.uri.queryParameters
            // Versions compared: `from` and `to` when given, else the one before the latest and the latest.
            let to = query["to"].flatMap { Int($0) }.flatMap { number in versions.first { $0.version == number } } ?? latest
            let from =
                query["from"].flatMap { Int($0) }.flatMap { number in versions.first { $0.version == number } }
                ?? versions.first { $0.version < to.version }
            var values = try await preview(latest.template, request: request).values(template: latest.template)
            values.merge(
                [
                    "key": latest.template.key, "name": latest.template.name, "version": latest.version,
                    "category": latest.template.category ?? false,
                    "data": TemplatePreview.pretty(latest.template.data),
                    "templatePushTitle": latest.template.pushTitle ?? false,
                    "templatePushBody": latest.template.pushBody ?? false,
                    "hasVariants": latest.template.variants?.isEmpty == false,
                    "variants": (latest.template.variants ?? [:]).sorted { $0.key.lowercased() < $1.key.lowercased() }.map { tag, variant in
                        ["tag": tag, "definition": TemplatePreview.pretty(variant)]
                    },
                    "versions": versions.map { stored -> [String: Any] in
                        [
                            "number": stored.version, "created": Self.day(stored.createdAt), "isFrom": stored.version == from?.version,
                            "isTo": stored.version == to.version,
                        ]
                    },
                    "compared": from.map { Self.comparison(from: $0, to: to) } ?? false,
                ]
            ) { $1 }
            return page("template", title: "Template \(latest.template.key)", section: .templates, session: session, values: values)
        }
        // The preview alone, for the page's script to swap in as the samples are typed.
        console.get("templates/{key}/preview") { request, context in
            _ = try await requireSession(request)
            guard let latest = try await templates.get(try context.parameters.require("key")) else {
                throw ConsoleRefusal(.notFound, "There is no template with this key.")
            }
            var values = try await preview(latest.template, request: request).values(template: latest.template)
            // Alone, the preview says itself what is wrong with the samples (the page shows it at the fields).
            values["fragment"] = true
            return Self.html(site.fragment("template-preview", values: values))
        }
    }

    /// The list, with what an upload loaded or the problem that stopped it (nothing is loaded then).
    private func templatesPage(_ request: Request, session: ConsoleSessionStore.Session, loaded: [String]?, problem: String?) async throws -> Response
    {
        let after = request.uri.queryParameters["after"].map(String.init)
        let found = try await templates.list(after: after, limit: Self.templatesPageSize)
        return page(
            "templates",
            title: "Templates",
            section: .templates,
            session: session,
            status: problem == nil ? .ok : .unprocessableContent,
            values: [
                "templates": found.map { stored -> [String: Any] in
                    [
                        "key": stored.template.key, "name": stored.template.name, "version": stored.version,
                        "variables": stored.template.variables.map(\.name).joined(separator: ", "), "updated": Self.day(stored.createdAt),
                    ]
                },
                "empty": found.isEmpty && after == nil,
                "next": found.count == Self.templatesPageSize ? (found.last?.template.key as Any? ?? false) : false,
                "loaded": loaded ?? false,
                "problem": problem ?? false,
            ]
        )
    }

    /// The template rendered with the samples in the request's query (`v_<variable>`), in the variant
    /// of its `locale` (one of the template's tags; none: the template's own), as a push to the first
    /// channel.
    private func preview(_ template: Template, request: Request) async throws -> TemplatePreview {
        let query = request.uri.queryParameters
        var typed: [String: String] = [:]
        for variable in template.variables {
            if let value = query[Substring(TemplatePreview.parameter(variable.name))] { typed[variable.name] = String(value) }
        }
        let channel = try await channels.list(after: nil, limit: 1).first?.channel
        let tags = (template.variants ?? [:]).keys.sorted { $0.lowercased() < $1.lowercased() }
        let locale = query["locale"].flatMap { asked in tags.first { $0.lowercased() == asked.lowercased() } }
        var preview = TemplatePreview(template: locale.map(template.localized) ?? template, typed: typed, channel: channel)
        preview.locales = tags
        preview.locale = locale
        return preview
    }

    /// Two versions' definitions as indented JSON, side by side.
    static func comparison(from: StoredTemplate, to: StoredTemplate) -> [String: Any] {
        func lines(_ template: Template) -> [String] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let text = (try? encoder.encode(template)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        }
        let diff = SideBySideDiff(old: lines(from.template), new: lines(to.template))
        return [
            "from": from.version, "to": to.version, "changed": diff.changed,
            "rows": diff.rows.map { row -> [String: Any] in
                ["kind": row.kind.rawValue, "old": row.old ?? "", "new": row.new ?? ""]
            },
        ]
    }
}
