import Foundation
import Mustache

extension Template {
    /// Checks the template as a whole: key and variable rules, defaults of the declared type, every
    /// string a valid mustache template, and every placeholder a declared variable.
    public func validate() throws(TemplateProblem) {
        if let problem = Self.keyProblem(key) { throw TemplateProblem(path: "$.key", message: problem) }
        try checkSizes()
        guard case .object = data else { throw TemplateProblem(path: "$.data", message: "must be a JSON object") }
        var declared = Set<String>()
        for (index, variable) in variables.enumerated() {
            let path = "$.variables[\(index)]"
            guard Self.isIdentifier(variable.name) else {
                throw TemplateProblem(path: "\(path).name", message: "must be a letter or _ followed by letters, digits or _")
            }
            guard declared.insert(variable.name).inserted else {
                throw TemplateProblem(path: "\(path).name", message: "'\(variable.name)' is declared twice")
            }
            if let value = variable.defaultValue, let problem = Self.typeProblem(value, as: variable.type) {
                throw TemplateProblem(path: "\(path).default", message: problem)
            }
        }
        for (path, text) in templatedStrings() {
            // Names as looked up, dotted: `user.nickname`; inside {{#flag}}…{{/flag}} a name is
            // recorded under the section's (`flag.title`). `user` itself is looked up on the way to
            // `user.nickname`, so only the longest names count.
            let names = try Self.placeholders(in: text, at: path)
            if path.hasPrefix("$.actions"), !declared.contains(Self.userRoot),
                names.contains(where: { Self.readsUser(Self.parts($0), declared: declared) })
            {
                throw TemplateProblem(path: path, message: "renders once per notification: the recipient's {{user.…}} fields are not available here")
            }
            for name in names.sorted() where !names.contains(where: { $0.hasPrefix(name + ".") }) {
                if let problem = Self.nameProblem(Self.parts(name), declared: declared) {
                    throw TemplateProblem(path: path, message: problem)
                }
            }
        }
        try validateVariants()
    }

    /// What is wrong with a name a template looks up; `nil` when it names a declared variable or a
    /// field of the recipient's profile.
    static func nameProblem(_ parts: ArraySlice<String>, declared: Set<String>) -> String? {
        guard let root = parts.first else { return nil }
        if declared.contains(root) {
            // A variable is a scalar without fields: a name after it (in its section, or dotted) is
            // looked up further down the stack, among the variables.
            return parts.count > 1 ? nameProblem(parts.dropFirst(), declared: declared) : nil
        }
        if root == batchRoot { return batchNameProblem(parts, declared: declared) }
        guard root == userRoot else { return "uses {{\(root)}}, which is not a declared variable" }
        if let problem = userFieldProblem(Array(parts)) {
            return "uses {{\(parts.joined(separator: "."))}}: \(problem)"
        }
        // A field other than the properties is a string without fields: a name after it (in its
        // section, `{{#user.nickname}}Hi {{user.nickname}}{{/user.nickname}}`) is looked up further
        // down the stack. Names under the properties are the customer's own: any may be there.
        return parts.count > 2 && parts[parts.startIndex + 1] != "properties" ? nameProblem(parts.dropFirst(2), declared: declared) : nil
    }

    /// Whether a name a template looks up reads the recipient's profile: `user.…`, or such a name in
    /// the section of a variable or of another field (`{{#vip}}Hi {{user.nickname}}{{/vip}}`).
    static func readsUser(_ parts: ArraySlice<String>, declared: Set<String>) -> Bool {
        guard let root = parts.first else { return false }
        if declared.contains(root) { return readsUser(parts.dropFirst(), declared: declared) }
        if root == batchRoot { return readsUser(parts.dropFirst(2), declared: declared) }
        return root == userRoot
    }

    /// What is wrong with a name under `batch`: one of its fields, then (in a field's section, or
    /// dotted after `first`, `latest` or an item) a name looked up further down the stack.
    static func batchNameProblem(_ parts: ArraySlice<String>, declared: Set<String>) -> String? {
        guard parts.count > 1, BatchContext.fields.contains(parts[parts.startIndex + 1]) else {
            return
                "uses {{\(parts.joined(separator: "."))}}: a digest's fields are batch.count, batch.others, batch.several, batch.first.<variable>, batch.latest.<variable> and batch.items"
        }
        return parts.count > 2 ? nameProblem(parts.dropFirst(2), declared: declared) : nil
    }

    /// The name under which templates read the digest they render (`{{batch.count}}`), unless the
    /// template declares a variable of that name.
    static let batchRoot = "batch"

    /// The name under which templates read the recipient's profile (`{{user.nickname}}`), unless the
    /// template declares a variable of that name.
    static let userRoot = "user"

    /// Whether the template reads the recipient's profile, so that it renders once per recipient.
    /// Templates that do not render once per notification, however many recipients it has.
    public var readsUserFields: Bool {
        let declared = Set(variables.map(\.name))
        guard !declared.contains(Self.userRoot) else { return false }
        return everyTemplatedString().contains { _, text in
            ((try? Self.placeholders(in: text, at: "")) ?? []).contains { Self.readsUser(Self.parts($0), declared: declared) }
        }
    }

    /// A dotted name's parts.
    static func parts(_ name: String) -> ArraySlice<String> {
        name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)[...]
    }

    static func userFieldProblem(_ parts: [String]) -> String? {
        let known = "user.id, user.nickname, user.profile_url, user.locale, user.time_zone or user.properties.<key>"
        guard parts.count > 1, RecipientProfile.fields.contains(parts[1]) else {
            return "the user's fields are \(known)"
        }
        if parts[1] == "properties", parts.count == 2 { return "name a key of the properties, as user.properties.first_name" }
        return nil
    }

    /// The template's strings parsed, by their text.
    public typealias ParsedStrings = [String: MustacheTemplate]

    /// Every string of the template that parses, parsed once: a template rendered for many
    /// recipients (a broadcast's batch, an edit) is not parsed again for each.
    public func parsedStrings() -> ParsedStrings {
        var parsed: ParsedStrings = [:]
        for (_, text) in everyTemplatedString() where parsed[text] == nil {
            parsed[text] = try? MustacheTemplate(string: Self.textPragma + text)
        }
        return parsed
    }

    /// What a template renders to for one recipient.
    public struct Rendered: Sendable, Equatable {
        public var data: JSONValue
        public var pushTitle: String?
        public var pushBody: String?
        /// The buttons, rendered (the same for every recipient: the send's variables only).
        public var actions: [Action] = []
    }

    /// Renders the template with `values` (shared variables overlaid by per-user ones by the caller)
    /// for `recipient` (`{{user.…}}` renders empty without one). Unknown variables, missing required
    /// ones and values of the wrong type are problems naming the variable.
    /// `parsed` (see `parsedStrings`) spares parsing the strings again for each of many recipients.
    public func render(
        _ values: [String: JSONValue],
        for recipient: RecipientProfile? = nil,
        batch: BatchContext? = nil,
        parsed: ParsedStrings = [:]
    ) throws(TemplateProblem) -> Rendered {
        let declared = Dictionary(uniqueKeysWithValues: variables.map { ($0.name, $0) })
        if let unknown = values.keys.sorted().first(where: { declared[$0] == nil }) {
            throw TemplateProblem(path: unknown, message: "is not a variable of template '\(key)'")
        }
        var context: [String: Any] = [:]
        if let recipient, declared[Self.userRoot] == nil { context[Self.userRoot] = recipient.context }
        if declared[Self.batchRoot] == nil { context[Self.batchRoot] = batchContext(batch ?? .single(values)) }
        for variable in variables {
            guard let value = values[variable.name] ?? variable.defaultValue else {
                if variable.required { throw TemplateProblem(path: variable.name, message: "is required") }
                continue
            }
            if let problem = Self.typeProblem(value, as: variable.type) {
                throw TemplateProblem(path: variable.name, message: problem)
            }
            context[variable.name] = Self.text(of: value)
        }
        func fill(_ text: String) throws(TemplateProblem) -> String {
            do {
                return try (parsed[text] ?? MustacheTemplate(string: Self.textPragma + text)).render(context)
            } catch {
                throw TemplateProblem(path: "template", message: "is not a valid template")
            }
        }
        do {
            let data = try self.data.mappingStrings { try fill($0) }
            var buttons: [Action] = []
            for (index, action) in (actions ?? []).enumerated() {
                let url = try action.url.map(fill).flatMap { $0.isEmpty ? nil : $0 }
                if let url, !WebURL.isHTTP(url) {
                    throw TemplateProblem(path: "actions[\(index)].url", message: "must render to an http(s) URL, not '\(url.prefix(100))'")
                }
                buttons.append(Action(id: action.id, label: try fill(action.label), url: url))
            }
            return Rendered(data: data, pushTitle: try pushTitle.map(fill), pushBody: try pushBody.map(fill), actions: buttons)
        } catch let problem as TemplateProblem {
            throw problem
        } catch {
            throw TemplateProblem(path: "template", message: "could not be rendered")
        }
    }

    // MARK: - Limits

    public static let maximumNameLength = 255
    public static let maximumVariables = 100
    /// The data template itself; what it renders to is held to `maximumDataBytes` separately.
    public static let maximumTemplateDataBytes = 32 * 1024
    public static let maximumDataDepth = 16
    public static let maximumPushTextLength = 1_000
    public static let maximumCategoryLength = 64
    public static let maximumActions = 5
    public static let maximumActionLabelLength = 100
    public static let maximumDefaultLength = 4_096

    func checkSizes() throws(TemplateProblem) {
        if name.count > Self.maximumNameLength {
            throw TemplateProblem(path: "$.name", message: "must be at most \(Self.maximumNameLength) characters")
        }
        if variables.count > Self.maximumVariables {
            throw TemplateProblem(path: "$.variables", message: "at most \(Self.maximumVariables) variables")
        }
        for (index, variable) in variables.enumerated() {
            if case .string(let text) = variable.defaultValue, text.count > Self.maximumDefaultLength {
                throw TemplateProblem(path: "$.variables[\(index)].default", message: "must be at most \(Self.maximumDefaultLength) characters")
            }
        }
        if data.depth > Self.maximumDataDepth {
            throw TemplateProblem(path: "$.data", message: "may nest at most \(Self.maximumDataDepth) levels")
        }
        if data.encodedSize > Self.maximumTemplateDataBytes {
            throw TemplateProblem(path: "$.data", message: "must encode to at most \(Self.maximumTemplateDataBytes) bytes")
        }
        for (path, text) in [("$.push_title", pushTitle), ("$.push_body", pushBody)] {
            if let text, text.count > Self.maximumPushTextLength {
                throw TemplateProblem(path: path, message: "must be at most \(Self.maximumPushTextLength) characters")
            }
        }
        if let category, category.isEmpty || category.count > Self.maximumCategoryLength {
            throw TemplateProblem(path: "$.category", message: "must be 1–\(Self.maximumCategoryLength) characters")
        }
        try checkActions()
    }

    func checkActions() throws(TemplateProblem) {
        guard let actions else { return }
        if actions.count > Self.maximumActions {
            throw TemplateProblem(path: "$.actions", message: "at most \(Self.maximumActions) actions")
        }
        var ids = Set<String>()
        for (index, action) in actions.enumerated() {
            let path = "$.actions[\(index)]"
            guard Self.isActionID(action.id) else {
                throw TemplateProblem(path: "\(path).id", message: "must be 1–64 characters from A–Z, a–z, 0–9, _ and -")
            }
            guard ids.insert(action.id).inserted else {
                throw TemplateProblem(path: "\(path).id", message: "'\(action.id)' is declared twice")
            }
            guard (1...Self.maximumActionLabelLength).contains(action.label.count) else {
                throw TemplateProblem(path: "\(path).label", message: "must be 1–\(Self.maximumActionLabelLength) characters")
            }
            if let url = action.url, url.count > WebURL.maximumLength {
                throw TemplateProblem(path: "\(path).url", message: "must be at most \(WebURL.maximumLength) characters")
            }
        }
    }

    // MARK: - Private

    /// Values are inserted as they are: the output is JSON string content, not HTML.
    static let textPragma = "{{% CONTENT_TYPE: TEXT}}"

    func templatedStrings() -> [(path: String, text: String)] {
        var strings = data.strings(at: "$.data")
        if let pushTitle { strings.append(("$.push_title", pushTitle)) }
        if let pushBody { strings.append(("$.push_body", pushBody)) }
        return strings + actionStrings()
    }

    /// The template's strings and its variants'.
    func everyTemplatedString() -> [(path: String, text: String)] {
        templatedStrings() + variantTags.flatMap { localized($0).templatedStrings() }
    }

    /// The actions' labels and URLs: rendered once per notification, so they cannot read the
    /// recipient's profile.
    func actionStrings() -> [(path: String, text: String)] {
        (actions ?? []).enumerated().flatMap { index, action in
            [("$.actions[\(index)].label", action.label)] + (action.url.map { [("$.actions[\(index)].url", $0)] } ?? [])
        }
    }

    /// The names a mustache template looks up, found by rendering it once against a recorder.
    static func placeholders(in text: String, at path: String) throws(TemplateProblem) -> Set<String> {
        let template: MustacheTemplate
        do {
            template = try MustacheTemplate(string: textPragma + text)
        } catch {
            throw TemplateProblem(path: path, message: "is not a valid template: \(parseProblem(error))")
        }
        // The parser drops a `{{` at the end of the text or of a line without a word: it is a tag
        // that was never finished (unless a set-delimiter tag changed what opens one).
        if !text.contains("{{="), hasDanglingOpener(text) {
            throw TemplateProblem(path: path, message: "is not a valid template: a tag is not finished")
        }
        let recorder = LookupRecorder()
        _ = template.render(recorder)
        return recorder.recorded
    }

    /// Whether a `{{` is followed by nothing, or by a line break, in `text`.
    static func hasDanglingOpener(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        for index in scalars.indices.dropLast() where scalars[index] == "{" && scalars[index + 1] == "{" {
            var next = index + 2
            while next < scalars.count, scalars[next] == "{" { next += 1 }
            if next == scalars.count || scalars[next] == "\n" || scalars[next] == "\r" { return true }
        }
        return false
    }

    /// What is wrong and where, in the template's own terms: the parser's error value names its internal
    /// types, and its column counts the pragma put in front of the text.
    static func parseProblem(_ error: any Error) -> String {
        guard let parse = error as? MustacheTemplate.ParserError else { return "it cannot be parsed" }
        let what: String
        switch parse.error as? MustacheTemplate.Error {
        case .sectionCloseNameIncorrect: what = "a section is closed with another name than it was opened with"
        case .unfinishedName: what = "a tag is not finished"
        case .expectedSectionEnd: what = "a section is not closed"
        case .invalidSetDelimiter: what = "a set-delimiter tag is malformed"
        case .transformAppliedToInheritanceSection, .illegalTokenInsideInheritSection, .textInsideInheritSection:
            what = "an inheritance section is malformed"
        case .invalidConfigVariableSyntax, .unrecognisedConfigVariable: what = "a pragma tag ({{% …}}) is not supported"
        case nil: what = "it cannot be parsed"
        }
        let line = parse.context.lineNumber
        let column = line == 1 ? parse.context.columnNumber - textPragma.count : parse.context.columnNumber
        return "\(what) (line \(line), column \(max(1, column)))"
    }

    /// An action's id: 1–64 characters from `A–Z a–z 0–9 _ -`.
    public static func isActionID(_ id: String) -> Bool {
        (1...64).contains(id.unicodeScalars.count)
            && id.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "_-".unicodeScalars.contains($0)
            }
    }

    /// A variable's name (and a user property's key, so that templates can name it): a letter or `_`
    /// followed by letters, digits or `_`, at most 64 characters.
    public static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.count <= 64 else { return false }
        let isStart = first == "_" || (first.isASCII && first.properties.isAlphabetic)
        return isStart && name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }

    static func typeProblem(_ value: JSONValue, as type: VariableType) -> String? {
        switch (type, value) {
        case (.string, .string), (.number, .number), (.bool, .bool): return nil
        case (.url, .string(let text)): return WebURL.isHTTP(text) ? nil : "must be an http(s) URL"
        case (.datetime, .string(let text)):
            return RFC3339.date(from: text) != nil ? nil : "must be an RFC 3339 date-time"
        default: return "must be a \(type.rawValue)"
        }
    }

    /// The mustache context of `batch`: each send's variables as the template reads them (its
    /// defaults for what a send left out; names it no longer declares are left out).
    func batchContext(_ batch: BatchContext) -> [String: Any] {
        func variablesContext(_ values: [String: JSONValue]) -> [String: Any] {
            var context: [String: Any] = [:]
            for variable in variables {
                if let value = values[variable.name] ?? variable.defaultValue { context[variable.name] = Self.text(of: value) }
            }
            return context
        }
        return [
            "count": batch.count, "others": batch.count - 1, "several": batch.count > 1,
            "first": variablesContext(batch.first), "latest": variablesContext(batch.latest),
            "items": batch.items.map(variablesContext),
        ]
    }

    static func text(of value: JSONValue) -> String {
        switch value {
        case .string(let text): return text
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let number):
            return number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        default: return ""
        }
    }
}

/// A mustache context that answers every lookup (so sections render their content) and remembers
/// the names asked for, dotted as they were written: the answer to `order` records `order.id` when
/// asked for `id`.
private final class LookupRecorder: MustacheParent, CustomStringConvertible {
    private let prefix: String
    private let names: Names

    final class Names {
        var all = Set<String>()
    }

    init() {
        prefix = ""
        names = Names()
    }

    private init(prefix: String, names: Names) {
        self.prefix = prefix
        self.names = names
    }

    var recorded: Set<String> { names.all }

    var description: String { "x" }

    func child(named name: String) -> Any? {
        let path = prefix + name
        names.all.insert(path)
        return LookupRecorder(prefix: path + ".", names: names)
    }
}
