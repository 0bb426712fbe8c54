import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension ConsoleRoutes {
    /// The channel form: the API's definition, with categories as lines of `id | name` (a third
    /// column `default` marks the default one).
    struct ChannelForm: ConsoleForm {
        var csrf: String
        var url: String?
        var kind: String
        var name: String?
        var coverURL: String?
        var customType: String?
        var categories: String?
        var retention: String?
        /// The throttle: empty limit for none.
        var throttleLimit: String?
        var throttleWindow: String?
        var throttlePer: String?
        var throttleBeyond: String?

        enum CodingKeys: String, CodingKey {
            case csrf, url, kind, name, categories, retention
            case throttleLimit = "throttle_limit"
            case throttleWindow = "throttle_window"
            case throttlePer = "throttle_per"
            case throttleBeyond = "throttle_beyond"
            case coverURL = "cover_url"
            case customType = "custom_type"
        }
    }

    static var channelsPageSize: Int { 50 }

    func registerChannels(on console: RouterGroup<Context>) {
        console.get("channels") { request, _ in
            let session = try await requireSession(request)
            let after = request.uri.queryParameters["after"].map(String.init)
            let found = try await channels.list(after: after, limit: Self.channelsPageSize)
            return page(
                "channels",
                title: "Channels",
                section: .channels,
                session: session,
                values: [
                    "channels": found.map { stored -> [String: Any] in
                        [
                            "url": stored.channel.url, "kind": stored.channel.kind.rawValue, "name": stored.channel.name,
                            "categories": stored.channel.categories.count, "retention": stored.channel.retention ?? "for ever",
                            "updated": Self.day(stored.updatedAt),
                        ]
                    },
                    "empty": found.isEmpty && after == nil,
                    "next": found.count == Self.channelsPageSize ? (found.last?.channel.url as Any? ?? false) : false,
                    "deleted": request.uri.queryParameters["deleted"].map(String.init) ?? false,
                ]
            )
        }
        console.get("channels/new") { request, _ in
            let session = try await requireSession(request)
            return channelForm(session: session, channel: nil, problem: nil)
        }
        console.post("channels/new") { request, context in
            let (form, session) = try await requireForm(ChannelForm.self, request, context: context)
            let url = (form.url ?? "").trimmingCharacters(in: .whitespaces)
            if let problem = Channel.urlProblem(url) {
                return channelForm(session: session, channel: nil, form: form, problem: "URL \(problem).")
            }
            if try await channels.get(url) != nil {
                return channelForm(session: session, channel: nil, form: form, problem: "A channel with the URL \(url) exists already.")
            }
            return try await save(form, url: url, session: session, isNew: true)
        }
        console.get("channels/{channel_url}") { request, context in
            let session = try await requireSession(request)
            guard let stored = try await channels.get(try context.parameters.require("channel_url")) else { throw Self.noChannel }
            return channelForm(session: session, channel: stored.channel, problem: nil)
        }
        console.post("channels/{channel_url}") { request, context in
            let (form, session) = try await requireForm(ChannelForm.self, request, context: context)
            let url = try context.parameters.require("channel_url")
            guard try await channels.get(url) != nil else { throw Self.noChannel }
            return try await save(form, url: url, session: session, isNew: false)
        }
        console.get("channels/{channel_url}/delete") { request, context in
            let session = try await requireSession(request)
            let url = try context.parameters.require("channel_url")
            guard let usage = try await channels.usage(url) else { throw Self.noChannel }
            return page(
                "channel-delete",
                title: "Delete \(url)",
                section: .channels,
                session: session,
                values: ["url": url, "notifications": usage.notifications, "copies": usage.copies]
            )
        }
        console.post("channels/{channel_url}/delete") { request, context in
            _ = try await requireForm(ButtonForm.self, request, context: context)
            let url = try context.parameters.require("channel_url")
            guard try await channels.delete(url) else { throw Self.noChannel }
            return Self.redirect("/console/channels?deleted=\(url.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? "")")
        }
    }

    static var noChannel: ConsoleRefusal { ConsoleRefusal(.notFound, "There is no channel with this URL.") }

    private func save(_ form: ChannelForm, url: String, session: ConsoleSessionStore.Session, isNew: Bool) async throws -> Response {
        guard let kind = Channel.Kind(rawValue: form.kind) else {
            return channelForm(session: session, channel: nil, form: form, url: url, problem: "Kind must be feed or chat.")
        }
        let categories: [Channel.Category]
        switch Self.categories(form.categories ?? "") {
        case .success(let parsed): categories = parsed
        case .failure(let problem): return channelForm(session: session, channel: nil, form: form, url: url, problem: problem.message)
        }
        let retention = form.retention?.trimmingCharacters(in: .whitespaces) ?? ""
        var throttle: Throttle?
        if let text = form.throttleLimit?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
            guard let limit = Int(text) else {
                return channelForm(session: session, channel: nil, form: form, url: url, problem: "Throttle: the limit must be a whole number.")
            }
            throttle = Throttle(
                limit: limit,
                window: form.throttleWindow?.trimmingCharacters(in: .whitespaces) ?? "",
                per: Throttle.Scope(rawValue: form.throttlePer ?? "") ?? .channel,
                beyond: Throttle.Beyond(rawValue: form.throttleBeyond ?? "") ?? .silence
            )
        }
        let channel = Channel(
            url: url,
            kind: kind,
            name: form.name ?? "",
            coverURL: form.coverURL ?? "",
            customType: form.customType ?? "",
            categories: categories,
            retention: retention.isEmpty ? nil : retention,
            throttle: throttle
        )
        if let problem = channel.problem() {
            return channelForm(session: session, channel: nil, form: form, url: url, problem: "\(problem.field) \(problem.message).")
        }
        do {
            _ = try await channels.put(channel)
        } catch let change as ChannelStore.KindChange {
            return channelForm(
                session: session,
                channel: nil,
                form: form,
                url: url,
                problem: "This channel is a \(change.existing.rawValue) channel; its kind cannot change."
            )
        }
        return Self.redirect("/console/channels")
    }

    struct CategoryProblem: Error {
        var message: String
    }

    /// Categories from the form's lines: `id | name`, or `id | name | default`.
    static func categories(_ text: String) -> Result<[Channel.Category], CategoryProblem> {
        var categories: [Channel.Category] = []
        for (number, line) in text.split(whereSeparator: \.isNewline).enumerated() {
            let fields = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            if fields.allSatisfy(\.isEmpty) { continue }
            guard (2...3).contains(fields.count), !fields[0].isEmpty, fields.count == 2 || ["default", ""].contains(fields[2]) else {
                return .failure(CategoryProblem(message: "Categories, line \(number + 1): write id | name, with | default after the default one."))
            }
            categories.append(Channel.Category(id: fields[0], name: fields[1], isDefault: fields.count == 3 && fields[2] == "default"))
        }
        return .success(categories)
    }

    /// The create or edit form: filled from the stored channel, or from the form just sent (with the
    /// problem it had).
    private func channelForm(
        session: ConsoleSessionStore.Session,
        channel: Channel?,
        form: ChannelForm? = nil,
        url: String? = nil,
        problem: String?
    ) -> Response {
        let isNew = channel == nil && url == nil
        let values: [String: Any] = [
            "isNew": isNew,
            "url": channel?.url ?? url ?? form?.url ?? "",
            "feed": (channel?.kind.rawValue ?? form?.kind ?? "feed") == "feed",
            "chat": (channel?.kind.rawValue ?? form?.kind) == "chat",
            "name": channel?.name ?? form?.name ?? "",
            "coverURL": channel?.coverURL ?? form?.coverURL ?? "",
            "customType": channel?.customType ?? form?.customType ?? "",
            "categories": channel.map { $0.categories.map { "\($0.id) | \($0.name)\($0.isDefault ? " | default" : "")" }.joined(separator: "\n") }
                ?? form?.categories ?? "",
            "retention": channel?.retention ?? form?.retention ?? "",
            "throttleLimit": channel.map { $0.throttle.map { String($0.limit) } ?? "" } ?? form?.throttleLimit ?? "",
            "throttleWindow": channel.map { $0.throttle?.window ?? "" } ?? form?.throttleWindow ?? "",
            "perCategory": (channel?.throttle?.per.rawValue ?? form?.throttlePer) == "category",
            "drops": (channel?.throttle?.beyond.rawValue ?? form?.throttleBeyond) == "drop",
            "problem": problem ?? false,
        ]
        let title = isNew ? "New channel" : "Channel \(channel?.url ?? url ?? "")"
        return page(
            "channel-form",
            title: title,
            section: .channels,
            session: session,
            status: problem == nil ? .ok : .unprocessableContent,
            values: values
        )
    }
}
