import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension ConsoleRoutes {
    /// A topic's definition, new or changed.
    struct TopicForm: ConsoleForm {
        var csrf: String
        var id: String?
        var name: String?
        var selfSubscribe: String?

        enum CodingKeys: String, CodingKey {
            case csrf, id, name
            case selfSubscribe = "self_subscribe"
        }
    }

    /// User ids to add or remove, separated by spaces, commas or lines.
    struct SubscribersForm: ConsoleForm {
        var csrf: String
        var userIDs: String

        enum CodingKeys: String, CodingKey {
            case csrf
            case userIDs = "user_ids"
        }

        var ids: [String] { userIDs.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init) }
    }

    static var topicsPageSize: Int { 50 }
    static var subscribersPageSize: Int { 100 }

    func registerTopics(on console: RouterGroup<Context>) {
        console.get("topics") { request, _ in
            let session = try await requireSession(request)
            return try await topicsPage(request, session: session, problem: nil, form: nil)
        }
        console.post("topics") { request, context in
            let (form, session) = try await requireForm(TopicForm.self, request, context: context)
            let id = (form.id ?? "").trimmingCharacters(in: .whitespaces)
            let answer = try await actions.putTopic(id, try Self.topicJSON(form))
            guard answer.succeeded else {
                return try await topicsPage(request, session: session, problem: Self.apiMessage(answer), form: form, status: .unprocessableContent)
            }
            return Self.redirect("/console/topics/\(Self.pathComponent(id))?notice=Saved")
        }
        console.get("topics/{topic_id}") { request, context in
            let session = try await requireSession(request)
            return try await topicPage(request, id: try Self.topicID(context), session: session, problem: nil)
        }
        console.post("topics/{topic_id}") { request, context in
            let (form, session) = try await requireForm(TopicForm.self, request, context: context)
            let id = try Self.topicID(context)
            let answer = try await actions.putTopic(id, try Self.topicJSON(form))
            guard answer.succeeded else { return try await topicPage(request, id: id, session: session, problem: Self.apiMessage(answer)) }
            return Self.redirect("/console/topics/\(Self.pathComponent(id))?notice=Saved")
        }
        for (path, add) in [("add", true), ("remove", false)] {
            console.post("topics/{topic_id}/subscribers/\(path)") { request, context in
                let (form, session) = try await requireForm(SubscribersForm.self, request, context: context)
                let id = try Self.topicID(context)
                let body = try JSONSerialization.data(withJSONObject: ["user_ids": form.ids])
                let answer = try await actions.changeSubscribers(id, Array(body), add)
                guard answer.succeeded else { return try await topicPage(request, id: id, session: session, problem: Self.apiMessage(answer)) }
                let changed = (Self.object(answer.body)?[add ? "added" : "removed"] as? Int) ?? 0
                return Self.redirect("/console/topics/\(Self.pathComponent(id))?notice=\(changed)+\(add ? "added" : "removed")")
            }
        }
    }

    private func topicsPage(
        _ request: Request,
        session: ConsoleSessionStore.Session,
        problem: String?,
        form: TopicForm?,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let after = request.uri.queryParameters["after"].map(String.init)
        let found = try await topics.list(after: after, limit: Self.topicsPageSize)
        return page(
            "topics",
            title: "Topics",
            section: .topics,
            session: session,
            status: status,
            values: [
                "topics": found.map { ["id": $0.id, "path": Self.pathComponent($0.id), "name": $0.name, "open": $0.selfSubscribe] },
                "empty": found.isEmpty && after == nil,
                "next": found.count == Self.topicsPageSize ? (found.last.map { Self.pathComponent($0.id) } as Any? ?? false) : false,
                "problem": problem ?? false,
                "newID": form?.id ?? "",
                "newName": form?.name ?? "",
            ]
        )
    }

    private func topicPage(_ request: Request, id: String, session: ConsoleSessionStore.Session, problem: String?) async throws -> Response {
        guard let (topic, counts) = try await topics.get(id) else { throw ConsoleRefusal(.notFound, "There is no topic \(id).") }
        let after = request.uri.queryParameters["after"].flatMap { Int64(String($0)) }
        let subscribers = try await topics.subscribers(topic: id, after: after, limit: Self.subscribersPageSize) ?? []
        return page(
            "topic",
            title: "Topic \(id)",
            section: .topics,
            session: session,
            status: problem == nil ? .ok : .unprocessableContent,
            values: [
                "id": id,
                "path": Self.pathComponent(id),
                "name": topic.name,
                "open": topic.selfSubscribe,
                "subscribers": counts.subscribers,
                "muted": counts.muted,
                "members": subscribers.map {
                    ["user": $0.userID, "userPath": Self.pathComponent($0.userID), "muted": $0.muted, "since": Self.day($0.subscribedAt)]
                },
                "hasMembers": !subscribers.isEmpty,
                "next": subscribers.count == Self.subscribersPageSize ? (subscribers.last.map { String($0.userKey) } as Any? ?? false) : false,
                "notice": Self.notice(request),
                "problem": problem ?? false,
            ]
        )
    }

    static func topicID(_ context: Context) throws -> String {
        guard let id = try context.parameters.require("topic_id").removingPercentEncoding, TopicID.problem(with: id) == nil else {
            throw ConsoleRefusal(.badRequest, "That is not a topic id.")
        }
        return id
    }

    /// The form as the body of `PUT /v1/topics/{topic_id}`.
    static func topicJSON(_ form: TopicForm) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: ["name": form.name ?? "", "self_subscribe": form.selfSubscribe == "on"]))
    }
}
