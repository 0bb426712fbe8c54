/// A SQL statement with bound parameters.
///
/// Interpolated values never become SQL text: each `\(value)` is replaced by the next `$n` placeholder
/// and the value travels separately, in binary, with its type:
///
/// ```swift
/// let rows = try await client.query("SELECT nickname FROM users WHERE id = \(userID)")
/// ```
///
/// Statements compose: interpolating a `PostgresQuery` splices its SQL with its parameters, renumbered
/// to follow the ones before it (as GRDB's `SQL` literals compose), so a fragment shared between
/// statements carries its own values:
///
/// ```swift
/// let live: PostgresQuery = "deleted_at IS NULL AND channel_key = \(channelKey)"
/// let rows = try await client.query("SELECT id FROM notifications WHERE id > \(after) AND \(live)")
/// ```
///
/// Use `\(unescaped:)` only for trusted text built at run time from no input, such as a column list.
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

        /// Splices `fragment` with its parameters, its `$n` placeholders renumbered after the ones already
        /// in this statement. Placeholders inside the fragment's quoted literals and identifiers are left
        /// alone.
        public mutating func appendInterpolation(_ fragment: PostgresQuery) {
            guard fragment.bindings.count > 0 else {
                sql += fragment.sql
                return
            }
            sql += PostgresQuery.renumbered(fragment.sql, by: bindings.count)
            bindings.append(contentsOf: fragment.bindings)
        }

        /// Splices trusted SQL text. Never pass user input here.
        public mutating func appendInterpolation(unescaped fragment: String) {
            sql += fragment
        }
    }
}

extension PostgresQuery {
    /// `sql` with every placeholder `$n` outside quotes made `$(n + offset)`.
    static func renumbered(_ sql: String, by offset: Int) -> String {
        guard offset > 0 else { return sql }
        var result: [UInt8] = []
        result.reserveCapacity(sql.utf8.count + 8)
        var quote: UInt8?
        var bytes = sql.utf8.makeIterator()
        var pending = bytes.next()
        while let byte = pending {
            pending = bytes.next()
            if let open = quote {
                if byte == open { quote = nil }
                result.append(byte)
                continue
            }
            if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                quote = byte
                result.append(byte)
                continue
            }
            guard byte == UInt8(ascii: "$"), let first = pending, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
                result.append(byte)
                continue
            }
            var number = 0
            while let digit = pending, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) {
                number = number * 10 + Int(digit - UInt8(ascii: "0"))
                pending = bytes.next()
            }
            result.append(UInt8(ascii: "$"))
            result.append(contentsOf: String(number + offset).utf8)
        }
        return String(decoding: result, as: UTF8.self)
    }
}
