/// A SQL statement with bound parameters.
///
/// Interpolated values never become SQL text: each `\(value)` is replaced by the next `$n` placeholder
/// and the value travels separately, in binary, with its type:
///
/// ```swift
/// let rows = try await client.query("SELECT nickname FROM users WHERE id = \(userID)")
/// ```
///
/// Use `\(unescaped:)` only for trusted fragments such as an `ORDER BY` direction chosen by code.
public struct PostgresQuery: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public var sql: String
    public var bindings: PostgresBindings

    /// Creates a statement from SQL text that already uses `$n` placeholders for `bindings`.
    public init(unsafeSQL sql: String, bindings: PostgresBindings = PostgresBindings()) {
        self.sql = sql
        self.bindings = bindings
    }

    public init(stringLiteral value: String) {
        self.init(unsafeSQL: value)
    }

    public init(stringInterpolation: StringInterpolation) {
        self.init(unsafeSQL: stringInterpolation.sql, bindings: stringInterpolation.bindings)
    }

    /// The SQL text only; parameter values are deliberately not shown.
    public var description: String { sql }

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        public typealias StringLiteralType = String

        var sql: String
        var bindings = PostgresBindings()

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = ""
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            bindings.append(value)
            sql += "$\(bindings.count)"
        }

        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            bindings.append(value)
            sql += "$\(bindings.count)"
        }

        /// Splices trusted SQL text. Never pass user input here.
        public mutating func appendInterpolation(unescaped fragment: String) {
            sql += fragment
        }
    }
}
