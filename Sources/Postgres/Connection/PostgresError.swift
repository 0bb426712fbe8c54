/// An error raised by the database or by the connection to it.
///
/// The `description` is safe to show to an HTTP client: it names the kind of failure and nothing of
/// the schema, the query or the server's message. Logs should use `Logger.describe(_:)`: the SQLSTATE
/// and the server message, and the server's `DETAIL` (which can quote row values) at debug level only.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The failure kinds callers branch on. Everything else is `.other`; inspect `sqlState` for more.
    public enum Code: String, Sendable, Equatable {
        case uniqueViolation = "unique violation"
        case foreignKeyViolation = "foreign key violation"
        case checkViolation = "check violation"
        case notNullViolation = "not-null violation"
        case serializationFailure = "serialization failure"
        case deadlockDetected = "deadlock detected"
        case syntaxError = "syntax error"
        case queryCanceled = "query canceled"
        /// The connection broke (network, server restart, terminated backend) or could not be made.
        case connectionLost = "connection lost"
        /// The pool was shut down or the client is no longer running.
        case clientClosed = "client closed"
        case other = "database error"
    }

    public let code: Code
    /// The five-character SQLSTATE, when the server (or libpq) supplied one.
    public let sqlState: String?
    /// The primary message from the server or libpq. Internal: never send it to clients.
    public let serverMessage: String
    /// `DETAIL` from the server, if any. Internal.
    public let detail: String?
    /// The violated constraint's name, if any; lets a store map a unique violation to a domain error.
    public let constraintName: String?

    public init(
        code: Code,
        sqlState: String? = nil,
        serverMessage: String,
        detail: String? = nil,
        constraintName: String? = nil
    ) {
        self.code = code
        self.sqlState = sqlState
        self.serverMessage = serverMessage
        self.detail = detail
        self.constraintName = constraintName
    }

    /// Builds an error from a SQLSTATE, classifying it into a `Code`.
    init(sqlState: String?, serverMessage: String, detail: String? = nil, constraintName: String? = nil) {
        self.init(
            code: Self.classify(sqlState),
            sqlState: sqlState,
            serverMessage: serverMessage,
            detail: detail,
            constraintName: constraintName
        )
    }

    /// The same error as another kind: a server error that ended the session is a lost connection to
    /// its caller, whatever its SQLSTATE.
    func reclassified(as code: Code) -> PostgresError {
        PostgresError(code: code, sqlState: sqlState, serverMessage: serverMessage, detail: detail, constraintName: constraintName)
    }

    static func classify(_ sqlState: String?) -> Code {
        guard let sqlState else { return .other }
        switch sqlState {
        case "23505": return .uniqueViolation
        case "23503": return .foreignKeyViolation
        case "23514": return .checkViolation
        case "23502": return .notNullViolation
        case "40001": return .serializationFailure
        case "40P01": return .deadlockDetected
        case "42601": return .syntaxError
        case "57014": return .queryCanceled
        // Class 08 is "connection exception"; 57P01–57P03 mean the server is going away.
        case "57P01", "57P02", "57P03": return .connectionLost
        default: return sqlState.hasPrefix("08") ? .connectionLost : .other
        }
    }

    /// True for the failures a whole transaction may safely be retried after.
    public var isTransient: Bool {
        code == .serializationFailure || code == .deadlockDetected
    }

    public var description: String {
        if let sqlState { return "\(code.rawValue) (SQLSTATE \(sqlState))" }
        return code.rawValue
    }

    /// The kind, the SQLSTATE and the server's message; not its `DETAIL`.
    public var debugDescription: String {
        var text = "PostgresError(\(code.rawValue)"
        if let sqlState { text += ", SQLSTATE \(sqlState)" }
        return text + "): \(serverMessage)"
    }

    /// `debugDescription` with the server's `DETAIL`, for debug-level logs.
    public var debugDescriptionWithDetail: String {
        guard let detail else { return debugDescription }
        return debugDescription + " DETAIL: \(detail)"
    }
}

/// A value could not be decoded into the requested Swift type.
public struct PostgresDecodingError: Error, Sendable, CustomStringConvertible {
    public var column: Int
    public var columnName: String
    public var postgresType: PostgresDataType
    public var swiftType: String
    public var reason: String

    public var description: String {
        "cannot decode column \(column) (\(columnName), type oid \(postgresType.oid)) as \(swiftType): \(reason)"
    }
}
