import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension ConsoleRoutes {
    struct UserForm: ConsoleForm {
        var csrf: String
    }

    /// Erasing asks for the user id typed again: a click alone should not erase anyone.
    struct EraseForm: ConsoleForm {
        var csrf: String
        var confirm: String?
    }

    struct ResetForm: ConsoleForm {
        var csrf: String
        var channelURL: String

        enum CodingKeys: String, CodingKey {
            case csrf
            case channelURL = "channel_url"
        }
    }

    /// Rows of each section the user page shows.
    static var userSectionLimit: Int { 100 }

    func registerUsers(on console: RouterGroup<Context>) {
        console.get("users") { request, _ in
            let session = try await requireSession(request)
            if let id = request.uri.queryParameters["id"].map(String.init)?.trimmingCharacters(in: .whitespaces), !id.isEmpty {
                return Self.redirect("/console/users/\(Self.pathComponent(id))")
            }
            return page("users", title: "Users", section: .users, session: session, values: ["notice": Self.notice(request)])
        }
        console.get("users/{user_id}") { request, context in
            let session = try await requireSession(request)
            let userID = try Self.userID(context)
            guard let (key, user) = try await exports.user(userID) else {
                return page(
                    "users",
                    title: "Users",
                    section: .users,
                    session: session,
                    status: .notFound,
                    values: ["problem": "There is no user \(userID).", "id": userID]
                )
            }
            func section(_ name: UserExportStore.Section) async throws -> [[String: Any]] {
                try await exports.page(name, userKey: key, after: .start, limit: Self.userSectionLimit).objects.compactMap(Self.object)
            }
            let preferences = try await section(.pushPreferences).first
            let (sessions, devices, channels) = (try await section(.sessions), try await section(.devices), try await section(.channels))
            let channelPreferences = try await section(.channelPushPreferences)
            let topicList = try await section(.topics).map { topic -> [String: Any] in
                var topic = topic
                topic["path"] = Self.pathComponent(topic["topic_id"] as? String ?? "")
                return topic
            }
            let erasure = try await erasures.status(userID: userID)
            let userObject = Self.object(user) ?? [:]
            let properties = (userObject["properties"] as? [String: Any]).flatMap { $0.isEmpty ? nil : Self.pretty($0) }
            return page(
                "user",
                title: "User \(userID)",
                section: .users,
                session: session,
                values: [
                    "user": userObject, "properties": properties ?? false, "userLocale": userObject["locale"] as? String ?? "(unknown)", "id": userID,
                    "path": Self.pathComponent(userID),
                    "sessions": sessions, "hasSessions": !sessions.isEmpty, "devices": devices, "hasDevices": !devices.isEmpty,
                    "channels": channels, "hasChannels": !channels.isEmpty, "preferences": preferences.map(Self.pretty) ?? false,
                    "channelPreferences": channelPreferences, "hasChannelPreferences": !channelPreferences.isEmpty,
                    "topics": topicList, "hasTopics": !topicList.isEmpty,
                    "erasing": erasure.map { $0.finishedAt == nil } ?? false,
                    "notice": Self.notice(request),
                ]
            )
        }
        console.post("users/{user_id}/sessions/revoke") { request, context in
            _ = try await requireForm(UserForm.self, request, context: context)
            let userID = try Self.userID(context)
            let revoked = try await userSessions.revokeAll(userID: userID)
            return Self.redirect("/console/users/\(Self.pathComponent(userID))?notice=\(revoked)+sessions+revoked")
        }
        console.post("users/{user_id}/reset") { request, context in
            let (form, _) = try await requireForm(ResetForm.self, request, context: context)
            let userID = try Self.userID(context)
            guard let key = try await exports.user(userID)?.key else { throw ConsoleRefusal(.notFound, "There is no user \(userID).") }
            guard let channel = try await collections.channel(form.channelURL) else { throw Self.noChannel }
            try await collections.reset(userKey: key, channelKey: channel.key)
            return Self.redirect("/console/users/\(Self.pathComponent(userID))?notice=\(Self.pathComponent(form.channelURL))+reset")
        }
        console.post("users/{user_id}/erase") { request, context in
            let (form, _) = try await requireForm(EraseForm.self, request, context: context)
            let userID = try Self.userID(context)
            guard form.confirm?.trimmingCharacters(in: .whitespaces) == userID else {
                throw ConsoleRefusal(.unprocessableContent, "Type the user id, \(userID), to confirm the erasure; nothing was erased.")
            }
            let answer = try await actions.eraseUser(userID)
            guard answer.succeeded else { throw ConsoleRefusal(.unprocessableContent, Self.apiMessage(answer)) }
            return Self.redirect("/console/users?notice=Erasing+\(Self.pathComponent(userID))")
        }
    }

    static func userID(_ context: Context) throws -> String {
        guard let id = try context.parameters.require("user_id").removingPercentEncoding, UserID.problem(with: id) == nil else {
            throw ConsoleRefusal(.badRequest, "That is not a user id.")
        }
        return id
    }

    /// `text` as one percent-encoded path component.
    static func pathComponent(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/", "+", "&", "?", "#"])) ?? text
    }

    /// The one-line notice a redirect carries (`?notice=`), shown once at the top of the page.
    static func notice(_ request: Request) -> Any {
        request.uri.queryParameters["notice"].map { String($0).replacingOccurrences(of: "+", with: " ") } ?? false
    }

    /// A row the export built as JSON text, as a dictionary for the templates.
    static func object(_ json: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(json))) as? [String: Any]
    }

    static func pretty(_ object: [String: Any]) -> String {
        (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])).map { String(decoding: $0, as: UTF8.self) }
            ?? ""
    }
}
