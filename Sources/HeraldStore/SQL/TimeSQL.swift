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
}
