import Hummingbird

/// `?limit=` and `?after=` of a keyset-paged list (every admin list pages the same way).
struct PageRequest {
    static let defaultLimit = 100
    static let maximumLimit = 200

    var limit: Int
    var after: String?

    init(_ request: Request, maximum: Int = maximumLimit, default defaultLimit: Int = defaultLimit) throws {
        let query = request.uri.queryParameters
        limit = defaultLimit
        if let text = query["limit"] {
            guard let value = Int(String(text)), (1...maximum).contains(value) else {
                throw APIError(.badRequest, code: "invalid_limit", message: "limit must be between 1 and \(maximum).")
            }
            limit = value
        }
        after = query["after"].map(String.init)
    }
}
