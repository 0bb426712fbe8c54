import Postgres

extension PostgresQuery.StringInterpolation {
    /// A recipient copy's status as the constant it is stored as: SQL text, not a parameter, so that
    /// the planner sees it as it sees a literal.
    mutating func appendInterpolation(_ status: CollectionItem.Status) {
        appendLiteral(String(status.rawValue))
    }
}
