import Foundation
import HeraldCore
import Postgres

/// The users a stored send's body (`POST /v1/notifications`, as a scheduled send keeps it) names, and
/// the same body without one of them: one list of the fields that hold user ids, so that what an
/// erasure removes and what an idempotency record is filed under stay the same.
public enum SendRequestUsers {
    /// Every user id the body names: its targets, exclusions, per-user variables, forced and mentioned
    /// users and sender.
    public static func ids(in request: JSONValue) -> [String] {
        guard case .object(let body) = request else { return [] }
        var ids = Set<String>()
        func add(_ list: JSONValue?) {
            guard case .array(let values)? = list else { return }
            for case .string(let id) in values { ids.insert(id) }
        }
        add(body["targets"])
        add(body["exclude"])
        if case .object(let variables)? = body["user_variables"] { ids.formUnion(variables.keys) }
        if case .object(let push)? = body["push"] {
            add(push["force_push"])
            add(push["mentioned_user_ids"])
            if case .string(let sender)? = push["sender_id"] { ids.insert(sender) }
        }
        return ids.sorted()
    }

    /// SQL true when the stored body `request` (a `jsonb` column) names `userID` in one of those
    /// fields: containment and key tests that `sql/0033_scheduled_sends_by_user.sql` indexes.
    static func names(_ userID: String, request: PostgresQuery) throws -> PostgresQuery {
        let id = JSONValue.string(userID)
        let listed: [JSONValue] = [
            .object(["targets": .array([id])]), .object(["exclude": .array([id])]),
            .object(["push": .object(["force_push": .array([id])])]), .object(["push": .object(["mentioned_user_ids": .array([id])])]),
            .object(["push": .object(["sender_id": id])]),
        ]
        var condition: PostgresQuery = "(\(request) -> 'user_variables') ? \(userID)"
        for shape in listed {
            let json = PostgresJSONB(utf8: Array(try JSONEncoder().encode(shape)))
            condition = "\(condition) OR \(request) @> \(json)"
        }
        return "(\(condition))"
    }

    /// The body without `userID` in any of those fields (a sender who is the user is left out).
    public static func removing(_ userID: String, from request: JSONValue) -> JSONValue {
        guard case .object(var body) = request else { return request }
        func removing(_ list: JSONValue?) -> JSONValue? {
            guard case .array(let ids)? = list else { return list }
            return .array(ids.filter { $0 != .string(userID) })
        }
        body["targets"] = removing(body["targets"])
        body["exclude"] = removing(body["exclude"])
        if case .object(var variables)? = body["user_variables"] {
            variables[userID] = nil
            body["user_variables"] = .object(variables)
        }
        if case .object(var push)? = body["push"] {
            push["force_push"] = removing(push["force_push"])
            push["mentioned_user_ids"] = removing(push["mentioned_user_ids"])
            if push["sender_id"] == .string(userID) { push["sender_id"] = nil }
            body["push"] = .object(push)
        }
        return .object(body)
    }
}
