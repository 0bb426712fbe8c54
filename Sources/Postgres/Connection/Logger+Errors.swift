import Logging

extension Logger {
    /// How `error` appears in this logger's records: its debug description — for a database error the
    /// SQLSTATE and the server's message, and the server's `DETAIL` only when this logger records debug
    /// messages, since `DETAIL` can quote row values (a duplicate key names the key's value).
    public func describe(_ error: any Error) -> Logger.MetadataValue {
        if let error = error as? PostgresError, logLevel <= .debug {
            return "\(error.debugDescriptionWithDetail)"
        }
        return "\(String(reflecting: error))"
    }
}
