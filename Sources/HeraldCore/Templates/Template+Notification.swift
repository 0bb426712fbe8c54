/// A notification's content: the data rendered with the shared variables, once for each of the
/// template's variants, and for each user who has per-user variables, the data rendered with those
/// laid over the shared ones (in the user's variant).
public struct RenderedNotification: Sendable, Equatable {
    public var shared: Template.Rendered
    /// The shared rendering of each variant, by lower-cased tag.
    public var variants: [String: Template.Rendered] = [:]
    /// Keyed by user id; only users with per-user variables.
    public var perUser: [String: Template.Rendered]
}

/// Why a notification could not be rendered, naming the variable and, for per-user variables, the user.
public struct NotificationRenderProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A variable is missing, unknown or of the wrong type.
        case variable
        /// The rendered data is over `Template.maximumDataBytes`.
        case tooLarge
    }

    public var kind: Kind
    /// The user whose per-user variables caused it; `nil` for the shared variables.
    public var userID: String?
    /// The variable at fault, for `.variable`.
    public var variable: String?
    public var message: String

    public var description: String { message }
}

extension Template {
    /// The most a notification's rendered data may take, as compact JSON: 32 KiB. Feeds carry it to
    /// every device on every sync; bigger content belongs behind a URL in the data.
    public static let maximumDataBytes = 32 * 1024

    /// Renders a notification for the shared variables (the profile's fields empty) in the template's
    /// own content and in each variant, and for every user with per-user variables or a profile
    /// given, in the variant of their locale (the profile's, else `locales`): a template that
    /// `readsUserFields` renders once per recipient.
    /// A digest's content (`batch`) is rendered the same way, for its shared variables only.
    public func renderNotification(
        variables: [String: JSONValue],
        userVariables: [String: [String: JSONValue]],
        profiles: [String: RecipientProfile] = [:],
        locales: [String: String] = [:],
        batch: BatchContext? = nil
    ) throws(NotificationRenderProblem) -> RenderedNotification {
        let tags = variantTags
        let parsed = userVariables.isEmpty && profiles.isEmpty && tags.isEmpty ? [:] : parsedStrings()
        let shared = try renderChecked(variables, userID: nil, batch: batch, parsed: parsed)
        var variants: [String: Template.Rendered] = [:]
        for tag in tags {
            variants[tag] = try localized(tag).renderChecked(variables, userID: nil, batch: batch, parsed: parsed)
        }
        var perUser: [String: Template.Rendered] = [:]
        let userIDs = Set(userVariables.keys).union(profiles.keys)
        perUser.reserveCapacity(userIDs.count)
        // Sorted so that, of several bad users, the error always names the same one.
        for userID in userIDs.sorted() {
            let merged = userVariables[userID].map { own in variables.merging(own) { _, own in own } } ?? variables
            let locale = profiles[userID]?.locale ?? locales[userID]
            let template = Self.variantTag(for: locale, among: tags).map(localized) ?? self
            perUser[userID] = try template.renderChecked(merged, userID: userID, recipient: profiles[userID], parsed: parsed)
        }
        return RenderedNotification(shared: shared, variants: variants, perUser: perUser)
    }

    /// Renders for one recipient of a broadcast reached by its fan-out (who has no per-user variables),
    /// in the variant of their locale, checked as a send checks it; `parsed` from `parsedStrings()`,
    /// made once for all of them.
    public func renderRecipient(
        variables: [String: JSONValue],
        recipient: RecipientProfile,
        parsed: ParsedStrings
    ) throws(NotificationRenderProblem) -> Template.Rendered {
        let template = Self.variantTag(for: recipient.locale, among: variantTags).map(localized) ?? self
        return try template.renderChecked(variables, userID: recipient.id, recipient: recipient, parsed: parsed)
    }

    private func renderChecked(
        _ values: [String: JSONValue],
        userID: String?,
        recipient: RecipientProfile? = nil,
        batch: BatchContext? = nil,
        parsed: ParsedStrings
    ) throws(NotificationRenderProblem) -> Template.Rendered {
        let rendered: Template.Rendered
        do {
            rendered = try render(values, for: recipient, batch: batch, parsed: parsed)
        } catch {
            let field = userID.map { "user_variables.\($0).\(error.path)" } ?? "variables.\(error.path)"
            let message = userID.map { "\(field) \(error.message) (user '\($0)')." } ?? "\(field) \(error.message)."
            throw NotificationRenderProblem(kind: .variable, userID: userID, variable: error.path, message: message)
        }
        let size = rendered.data.encodedSize
        guard size <= Self.maximumDataBytes else {
            let whose = userID.map { " for user '\($0)'" } ?? ""
            throw NotificationRenderProblem(
                kind: .tooLarge,
                userID: userID,
                variable: nil,
                message: "The rendered data\(whose) is \(size) bytes; the limit is \(Self.maximumDataBytes) bytes."
            )
        }
        return rendered
    }
}
