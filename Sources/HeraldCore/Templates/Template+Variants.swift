import Foundation

extension Template {
    /// A translation of a template: what differs for recipients of one locale. A field left out is
    /// its base language's (`pt` for `pt-BR`), else the template's own, so a variant may translate
    /// only the push text; an action is named by the id of one of the template's and gives its label,
    /// and its URL if that differs too.
    public struct Variant: Sendable, Equatable, Codable {
        public var data: JSONValue?
        public var pushTitle: String?
        public var pushBody: String?
        /// Labels (and URLs where they differ) of the template's actions, by id.
        public var actions: [Action]?

        public init(data: JSONValue? = nil, pushTitle: String? = nil, pushBody: String? = nil, actions: [Action]? = nil) {
            self.data = data
            self.pushTitle = pushTitle
            self.pushBody = pushBody
            self.actions = actions
        }

        enum CodingKeys: String, CodingKey {
            case data, actions
            case pushTitle = "push_title"
            case pushBody = "push_body"
        }
    }

    /// At most this many variants.
    public static let maximumVariants = 30

    /// Whether `tag` can name a variant: a BCP 47 language tag as apps write them — a language of
    /// 2–8 letters, then subtags of 1–8 letters or digits after hyphens (`de`, `pt-BR`, `zh-Hant-TW`),
    /// at most 35 characters. Compared without regard to case.
    public static func isLanguageTag(_ tag: String) -> Bool {
        guard tag.utf8.count <= 35 else { return false }
        let subtags = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard let language = subtags.first, (2...8).contains(language.count), language.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            return false
        }
        return subtags.dropFirst().allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    /// The variant tags, lower-cased: how notifications keep the renderings and copies name theirs.
    public var variantTags: [String] {
        (variants ?? [:]).keys.map { $0.lowercased() }.sorted()
    }

    /// The variant a recipient of `locale` gets, as one of `tags` (lower-cased): the longest tag that
    /// is the locale or a prefix of it ending before a hyphen — `pt-BR` finds `pt-br`, else `pt` —
    /// and `nil` (the template's own content) when none is. `TranslationSQL` makes the same choice in
    /// a statement, for the copies a fan-out writes.
    public static func variantTag(for locale: String?, among tags: [String]) -> String? {
        guard let locale, !tags.isEmpty else { return nil }
        let wanted = locale.lowercased() + "-"
        return tags.filter { wanted.hasPrefix($0 + "-") }.max { $0.count < $1.count }
    }

    /// The template as a recipient of variant `tag` (a key of `variants`, any case) sees it: the
    /// fields of its base languages' variants, the more specific over the less (`pt`, then `pt-BR`),
    /// over the template's own.
    public func localized(_ tag: String) -> Template {
        let wanted = tag.lowercased() + "-"
        let chain = (variants ?? [:]).filter { wanted.hasPrefix($0.key.lowercased() + "-") }.sorted { $0.key.count < $1.key.count }
        var localized = self
        localized.variants = nil
        for (_, variant) in chain {
            if let data = variant.data { localized.data = data }
            if let title = variant.pushTitle { localized.pushTitle = title }
            if let body = variant.pushBody { localized.pushBody = body }
            for text in variant.actions ?? [] {
                guard let index = localized.actions?.firstIndex(where: { $0.id == text.id }) else { continue }
                localized.actions?[index].label = text.label
                if let url = text.url { localized.actions?[index].url = url }
            }
        }
        return localized
    }

    /// Each variant checked as a template of its own (the template's fields where it has none), with
    /// problems placed under `$.variants.<tag>`.
    func validateVariants() throws(TemplateProblem) {
        guard let variants else { return }
        if variants.count > Self.maximumVariants {
            throw TemplateProblem(path: "$.variants", message: "at most \(Self.maximumVariants) variants")
        }
        var seen = Set<String>()
        for tag in variants.keys.sorted() {
            let path = "$.variants.\(tag)"
            guard Self.isLanguageTag(tag) else {
                throw TemplateProblem(path: path, message: "must be a language tag such as de, pt-BR or zh-Hant")
            }
            guard seen.insert(tag.lowercased()).inserted else {
                throw TemplateProblem(path: path, message: "names the same locale as another variant (tags are compared without case)")
            }
            let ids = Set((actions ?? []).map(\.id))
            for (index, text) in (variants[tag]?.actions ?? []).enumerated() where !ids.contains(text.id) {
                throw TemplateProblem(path: "\(path).actions[\(index)].id", message: "'\(text.id)' is not an action of the template")
            }
            do {
                try localized(tag).validate()
            } catch {
                throw TemplateProblem(path: error.path.replacingOccurrences(of: "$.", with: "\(path).", options: .anchored), message: error.message)
            }
        }
    }
}
