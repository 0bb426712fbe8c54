import HeraldCore
import Postgres

/// A collection's filter as conditions on the copy `r` and its notification `n`.
enum CollectionFilterSQL {
    /// The copy is live and in the filter's status (it shows in a load or a page).
    static func shows(_ filter: CollectionFilter) -> PostgresQuery {
        "NOT r.deleted AND \(status(filter.status)) AND \(category(filter.category))"
    }

    /// The change of copy `r` is a removal for a collection of this status: the copy was deleted, or
    /// its state (archived, read) no longer fits the status. A state change moves a notification out
    /// of (or into) a filtered collection by its position, exactly as a deletion (or an edit) does.
    static func leaves(_ status: CollectionFilter.Status) -> PostgresQuery {
        status == .all ? "r.deleted" : "(r.deleted OR NOT (\(self.status(status))))"
    }

    static func status(_ status: CollectionFilter.Status) -> PostgresQuery {
        switch status {
        case .inbox: return "NOT r.archived"
        case .unread: return "(NOT r.archived AND r.status < \(CollectionItem.Status.read))"
        case .read: return "(NOT r.archived AND r.status = \(CollectionItem.Status.read))"
        case .archived: return "r.archived"
        case .all: return "true"
        }
    }

    /// The category condition; always true without one. (The category of a notification never
    /// changes, so a category filter need not turn changes into removals.)
    static func category(_ category: String?) -> PostgresQuery {
        category.map { "n.category = \($0)" } ?? "true"
    }
}
