import Postgres

/// Durations and instants as SQL.
enum TimeSQL {
    /// `duration` as interval text (`'1500000 microseconds'`), to be bound and cast with `::interval`.
    static func interval(_ duration: Duration) -> String {
        let micros = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        return "\(micros) microseconds"
    }

    /// The transaction's `now()` in microseconds since 1970 (exact: `extract` answers a numeric).
    static let nowMicroseconds: PostgresQuery = "(extract(epoch FROM now()) * 1000000)::int8"

    /// The timestamp column as the API writes times (RFC 3339, UTC, milliseconds), or SQL NULL: for
    /// JSON built in SQL.
    static func rfc3339(_ column: String) -> PostgresQuery {
        "to_char(\(unescaped: column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    }
}
