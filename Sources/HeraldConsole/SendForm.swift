import Foundation
import HeraldCore

/// The console's send form: its fields turned into the body of `POST /v1/notifications` (or of
/// `POST /v1/scheduled-sends`, when it says when), and that request written as a `curl` command.
struct SendForm {
    /// The form's fields by name: `channel_url`, `audience` (`targets`, `all` or `topic`), `topic`, `targets` (ids
    /// separated by spaces, commas or lines), `v_<variable>`, `push_alert`, `push_text`, `push_sound`,
    /// `push_priority`, `expires_at`, `batch_key`, `batch_window`, `batch_alert`, `send_at`,
    /// `deliver_at_local`, `repeat`.
    var fields: [String: String]

    /// The form says when: it schedules the send rather than making it.
    var isScheduled: Bool { !field("send_at").isEmpty || !field("deliver_at_local").isEmpty }

    func field(_ name: String) -> String {
        (fields[name] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var targets: [String] {
        field("targets").split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
    }

    /// The API request's body. Values are typed as the template declares (a number field that is not
    /// a number is sent as text, and the API says what is wrong, as it would to any client).
    func body(template: Template) -> JSONValue {
        var body: [String: JSONValue] = [
            "channel_url": .string(field("channel_url")),
            "template_key": .string(template.key),
        ]
        var variables: [String: JSONValue] = [:]
        for variable in template.variables {
            let text = field(TemplatePreview.parameter(variable.name))
            guard !text.isEmpty else { continue }
            variables[variable.name] = TemplatePreview.value(text, as: variable.type) ?? .string(text)
        }
        if !variables.isEmpty { body["variables"] = .object(variables) }
        if field("audience") == "all" {
            body["audience"] = .string("all")
        } else if field("audience") == "topic" {
            body["topic"] = .string(field("topic"))
        } else {
            body["targets"] = .array(targets.map(JSONValue.string))
        }
        var push: [String: JSONValue] = [:]
        if field("push_alert") == "on" { push["alert"] = .bool(true) }
        if !field("push_text").isEmpty { push["text"] = .string(field("push_text")) }
        if !field("push_sound").isEmpty { push["sound"] = .string(field("push_sound")) }
        if field("push_priority") == "low" { push["priority"] = .string("low") }
        if !push.isEmpty { body["push"] = .object(push) }
        if !field("expires_at").isEmpty { body["expires_at"] = .string(field("expires_at")) }
        if !field("batch_key").isEmpty {
            var batch: [String: JSONValue] = ["key": .string(field("batch_key")), "window": .string(field("batch_window"))]
            if ["last", "none"].contains(field("batch_alert")) { batch["alert"] = .string(field("batch_alert")) }
            body["batch"] = .object(batch)
        }
        for name in ["send_at", "deliver_at_local", "repeat"] where !field(name).isEmpty { body[name] = .string(field(name)) }
        return .object(body)
    }

    /// The body as compact JSON with sorted keys: what is sent, and what the `curl` command shows.
    static func json(_ body: JSONValue) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? Array(encoder.encode(body))) ?? []
    }

    /// The same request from a terminal, against `origin` (`http://host:port`).
    static func curl(origin: String, body: [UInt8], scheduled: Bool = false) -> String {
        let quoted = String(decoding: body, as: UTF8.self).replacingOccurrences(of: "'", with: #"'\''"#)
        return """
            curl -X POST \(origin)/v1/\(scheduled ? "scheduled-sends" : "notifications") \\
              -H "Authorization: Bearer $HERALD_ADMIN_TOKEN" \\
              -H "Content-Type: application/json" \\
              -d '\(quoted)'
            """
    }
}

/// A form's fields as they came, for forms whose fields depend on the page (the send form's
/// variables).
struct FieldsForm: ConsoleForm {
    var fields: [String: String]
    var csrf: String { fields["csrf"] ?? "" }

    init(from decoder: any Decoder) throws {
        fields = try [String: String](from: decoder)
    }
}
