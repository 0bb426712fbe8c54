import Foundation

/// A notification template, as admins write it: JSON data whose strings hold `{{variable}}`
/// placeholders (rendered with swift-mustache), the variables it takes, optional push title and body
/// templates and a category.
public struct Template: Sendable, Equatable, Codable {
    /// The type a variable's value must have.
    public enum VariableType: String, Sendable, Codable {
        case string, number, bool, url, datetime
    }

    public struct Variable: Sendable, Equatable, Codable {
        public var name: String
        public var type: VariableType
        public var required: Bool
        public var defaultValue: JSONValue?

        public init(name: String, type: VariableType, required: Bool = false, defaultValue: JSONValue? = nil) {
            self.name = name
            self.type = type
            self.required = required
            self.defaultValue = defaultValue
        }

        enum CodingKeys: String, CodingKey {
            case name, type, required
            case defaultValue = "default"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            type = try container.decode(VariableType.self, forKey: .type)
            required = try container.decodeIfPresent(Bool.self, forKey: .required) ?? false
            defaultValue = try container.decodeIfPresent(JSONValue.self, forKey: .defaultValue)
        }
    }

    public var key: String
    public var name: String
    public var variables: [Variable]
    public var data: JSONValue
    public var pushTitle: String?
    public var pushBody: String?
    public var category: String?
    /// Buttons the notification offers (at most `maximumActions`); `nil` when none.
    public var actions: [Action]?
    /// Translations by language tag (`de`, `pt-BR`): each recipient gets the variant of their
    /// locale (see `variantTag(for:among:)`), or the template's own content; `nil` when none.
    public var variants: [String: Variant]?

    /// A button: an id the app and Herald know it by, a label, and where it leads (none: the app
    /// handles it). Label and URL are mustache templates, rendered once per notification with the
    /// send's variables.
    public struct Action: Sendable, Equatable, Codable {
        public var id: String
        public var label: String
        public var url: String?

        public init(id: String, label: String, url: String? = nil) {
            self.id = id
            self.label = label
            self.url = url
        }
    }

    public init(
        key: String,
        name: String,
        variables: [Variable],
        data: JSONValue,
        pushTitle: String? = nil,
        pushBody: String? = nil,
        category: String? = nil,
        actions: [Action]? = nil,
        variants: [String: Variant]? = nil
    ) {
        self.key = key
        self.name = name
        self.variables = variables
        self.data = data
        self.pushTitle = pushTitle
        self.pushBody = pushBody
        self.category = category
        self.actions = actions
        self.variants = variants
    }

    enum CodingKeys: String, CodingKey {
        case key, name, variables, data, category, actions, variants
        case pushTitle = "push_title"
        case pushBody = "push_body"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decodeIfPresent(String.self, forKey: .key) ?? ""
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? ""
        variables = try container.decodeIfPresent([Variable].self, forKey: .variables) ?? []
        data = try container.decode(JSONValue.self, forKey: .data)
        pushTitle = try container.decodeIfPresent(String.self, forKey: .pushTitle)
        pushBody = try container.decodeIfPresent(String.self, forKey: .pushBody)
        category = try container.decodeIfPresent(String.self, forKey: .category)
        actions = try container.decodeIfPresent([Action].self, forKey: .actions)
        variants = try container.decodeIfPresent([String: Variant].self, forKey: .variants)
    }

    /// Keys are 1–64 characters from `a–z 0–9 _ . -`.
    public static func keyProblem(_ key: String) -> String? {
        if key.isEmpty || key.count > 64 { return "must be 1–64 characters" }
        let allowed = key.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || "_.-".unicodeScalars.contains($0) }
        return allowed ? nil : "may contain only a–z, 0–9, _ . and -"
    }
}

/// A rule a template or a set of variables breaks: where (a JSON path, or a variable) and why.
public struct TemplateProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}
