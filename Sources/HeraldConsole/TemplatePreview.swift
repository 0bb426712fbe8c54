import Foundation
import HeraldCore

/// What a template renders to for sample variables typed into the console, and the APNs alert payload
/// a push of it would carry; or where the variables are wrong.
struct TemplatePreview {
    /// The values typed, by variable name (empty: not given, so the default applies).
    var typed: [String: String]
    /// Problems by variable name, or under `""` for one of the template as a whole.
    var problems: [String: String] = [:]
    var rendered: Template.Rendered?
    var payload: [UInt8] = []
    /// The alert text was cut to fit the payload in APNs' limit.
    var cut = false
    /// The template's variant tags, to preview in; and the one this preview is in (`nil`: its own).
    var locales: [String] = []
    var locale: String?

    /// The query parameter that carries a variable's sample value.
    static func parameter(_ variable: String) -> String { "v_" + variable }

    init(template: Template, typed: [String: String], channel: Channel?) {
        self.typed = typed
        var values: [String: JSONValue] = [:]
        for variable in template.variables {
            guard let text = typed[variable.name], !text.isEmpty else { continue }
            guard let value = Self.value(text, as: variable.type) else {
                problems[variable.name] = variable.type == .number ? "must be a number" : "must be true or false"
                continue
            }
            values[variable.name] = value
        }
        guard problems.isEmpty else { return }
        let rendered: Template.Rendered
        do {
            rendered = try template.render(values)
        } catch {
            problems[template.variables.contains { $0.name == error.path } ? error.path : ""] = error.message
            return
        }
        self.rendered = rendered
        var dataTitle: String?
        if case .object(let members) = rendered.data, case .string(let title)? = members["title"] { dataTitle = title }
        let text = rendered.pushBody ?? dataTitle ?? "You have a new notification"
        payload = AlertPayload.make(
            AlertPayload.Content(
                notificationID: 1,
                createdAtMilliseconds: Int64(Date().timeIntervalSince1970 * 1000),
                appID: "herald",
                title: rendered.pushTitle,
                text: text,
                includeNickname: false,
                type: "ADMM",
                customType: template.category ?? "",
                channelURL: channel?.url ?? "channel",
                channelName: channel?.name ?? "",
                channelCustomType: channel?.customType ?? "",
                channelType: channel?.kind.rawValue ?? "feed",
                channelUnreadCount: 1,
                unreadMessageCount: 1,
                badge: 1,
                sound: "default",
                sender: nil,
                recipient: .init(id: "preview-user", name: ""),
                mentionedUsers: [],
                audienceType: "targets",
                extraAPS: [:],
                custom: [:]
            )
        )
        cut = !String(decoding: payload, as: UTF8.self).contains(Self.jsonEscaped(text))
    }

    /// A value typed into a field, as the variable's type takes it; `nil` when it is not one.
    static func value(_ text: String, as type: Template.VariableType) -> JSONValue? {
        switch type {
        case .number: Double(text).map(JSONValue.number)
        case .bool: text == "true" ? .bool(true) : text == "false" ? .bool(false) : nil
        case .string, .url, .datetime: .string(text)
        }
    }

    static func jsonEscaped(_ text: String) -> String {
        let encoded = (try? JSONEncoder().encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
        return String(encoded.dropFirst().dropLast())
    }

    /// Indented JSON with sorted keys, for reading.
    static func pretty(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    static func pretty(json bytes: [UInt8]) -> String {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else { return String(decoding: bytes, as: UTF8.self) }
        return pretty(value)
    }

    /// The values for the console's templates: each field with its sample and problem, the rendering.
    func values(template: Template) -> [String: Any] {
        [
            "fields": Self.fields(template, typed: typed, problems: problems),
            "templateProblem": problems[""] ?? false,
            "rendered": rendered != nil,
            "renderedData": rendered.map { Self.pretty($0.data) } ?? "",
            "pushTitle": rendered?.pushTitle ?? false,
            "pushBody": rendered?.pushBody ?? false,
            "payload": Self.pretty(json: payload),
            "payloadBytes": payload.count,
            "payloadLimit": RefreshPayload.maximumBytes,
            "payloadShare": payload.count * 100 / RefreshPayload.maximumBytes,
            "cut": cut,
            "hasLocales": !locales.isEmpty,
            "locales": locales.map { ["tag": $0, "selected": $0 == locale] },
            "locale": locale ?? false,
        ]
    }

    /// A form field for each of the template's variables: its sample as typed and its problem.
    static func fields(_ template: Template, typed: [String: String], problems: [String: String]) -> [[String: Any]] {
        template.variables.map { variable -> [String: Any] in
            [
                "name": variable.name, "parameter": Self.parameter(variable.name), "type": variable.type.rawValue,
                "required": variable.required, "value": typed[variable.name] ?? "",
                "number": variable.type == .number, "bool": variable.type == .bool,
                "isTrue": typed[variable.name] == "true", "isFalse": typed[variable.name] == "false",
                "inputType": variable.type == .url ? "url" : "text",
                "default": variable.defaultValue.map { Self.pretty($0) } ?? false,
                "problem": problems[variable.name] ?? false,
            ]
        }
    }
}
