/// Why migrations could not be applied. The descriptions are written for the operator reading the log.
public enum MigrationError: Error, Sendable, CustomStringConvertible, Equatable {
    /// An applied migration's file no longer matches what was applied.
    case checksumMismatch(name: String, applied: String, current: String)
    /// The database has a migration this build does not know (it was migrated by a newer Herald).
    case unknownApplied(name: String)
    /// A migration failed; its transaction was rolled back and nothing of it remains.
    case failed(name: String, reason: String)
    case unreadableDirectory(String)

    public var description: String {
        switch self {
        case .checksumMismatch(let name, let applied, let current):
            return """
                migration \(name).sql was already applied with checksum \(applied.prefix(12)) but the file now has \
                checksum \(current.prefix(12)); applied migrations must never be edited — restore the file and put \
                the change in a new migration
                """
        case .unknownApplied(let name):
            return "the database has migration \(name) applied, which this build of Herald does not have; run a newer Herald"
        case .failed(let name, let reason):
            return "migration \(name).sql failed and was rolled back: \(reason)"
        case .unreadableDirectory(let path):
            return "cannot read migrations from \(path)"
        }
    }
}
