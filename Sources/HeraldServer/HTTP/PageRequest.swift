import HeraldCore
import Hummingbird
import HummingbirdCore

/// `?limit=` and `?after=` of a keyset-paged list (every admin list pages the same way).
struct PageRequest {
    static let defaultLimit = 100
    static let maximumLimit = 200
    static let maximumCursorLength = 128

    var limit: Int
    var after: String?

    init(_ request: Request, maximum: Int = maximumLimit, default defaultLimit: Int = defaultLimit) throws {
        try self.init(query: request.uri.queryParameters, maximum: maximum, default: defaultLimit)
    }

    /// From query parameters already parsed (`URI.queryParameters` parses the query on every call).
    init(query: FlatDictionary<Substring, Substring>, maximum: Int = maximumLimit, default defaultLimit: Int = defaultLimit) throws {
        limit = defaultLimit
        if let text = query["limit"] {
            guard let value = CanonicalInteger.parse(text).map(Int.init), (1...maximum).contains(value) else {
                throw APIError(.badRequest, code: "invalid_limit", message: "limit must be between 1 and \(maximum).")
            }
            limit = value
        }
        if let text = query["after"] {
            // Every list is keyed by something of at most 128 characters.
            guard text.count <= Self.maximumCursorLength else {
                throw APIError(.badRequest, code: "invalid_after", message: "after must be at most \(Self.maximumCursorLength) characters.")
            }
            after = String(text)
        }
    }
}
