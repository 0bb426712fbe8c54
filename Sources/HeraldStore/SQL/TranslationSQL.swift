import Foundation
import HeraldCore
import Postgres

/// Translations in SQL (`sql/0029_translations.sql`): which variant a copy gets, and what a copy of
/// `notification_recipients r` of `notifications n` reads in its variant.
enum TranslationSQL {
    /// The variant a user of locale `locale` (a text expression) gets among `tags` (lower-cased), as
    /// `Template.variantTag(for:among:)` chooses it: the longest tag that is the locale or a prefix
    /// of it ending before a hyphen; NULL for the notification's own content. One CASE over the
    /// row's own column, so a fan-out stays one set-based statement whatever the languages.
    static func variant(locale: PostgresQuery, tags: [String]) -> PostgresQuery {
        guard !tags.isEmpty else { return "NULL::text" }
        var query: PostgresQuery = "CASE"
        for tag in tags.sorted(by: { $0.count > $1.count }) {
            query = "\(query) WHEN starts_with(lower(\(locale)) || '-', \(tag + "-")) THEN \(tag)"
        }
        return "\(query) END"
    }

    /// The copy's data: its own rendering, else its variant's, else the notification's.
    static let data: PostgresQuery = "coalesce(r.data, n.variants -> r.variant -> 'data', n.data)"
    static let pushTitle: PostgresQuery = "coalesce(r.push_title, n.variants -> r.variant ->> 'push_title', n.push_title)"
    static let pushBody: PostgresQuery = "coalesce(r.push_body, n.variants -> r.variant ->> 'push_body', n.push_body)"
    /// The buttons in the copy's language (their ids are the same in every variant).
    static let actions: PostgresQuery = "coalesce(n.variants -> r.variant -> 'actions', n.actions)"

    /// `{tag: {data, push_title, push_body, actions}}` of a notification's variants.
    static func variantsJSON(_ variants: [String: Template.Rendered]) throws -> PostgresJSONB {
        struct Variant: Encodable {
            var data: JSONValue
            var push_title: String?
            var push_body: String?
            var actions: [Template.Action]
        }
        let map = variants.mapValues { Variant(data: $0.data, push_title: $0.pushTitle, push_body: $0.pushBody, actions: $0.actions) }
        return try PostgresJSONB(utf8: Array(JSONEncoder().encode(map)))
    }
}
