/// Which notifications of a channel a collection shows, by what the user did with them.
public enum InboxStatus: String, Sendable, Hashable, CaseIterable {
    /// Everything not archived, read or unread: the inbox, and the default.
    case inbox
    /// Not archived and not read.
    case unread
    /// Not archived and read.
    case read
    /// Archived only.
    case archived
    /// Everything the user has not deleted.
    case all

    /// Whether a notification in this state belongs in a collection of this status.
    public func shows(_ notification: HeraldNotification) -> Bool {
        switch self {
        case .inbox: return !notification.archived
        case .unread: return !notification.archived && notification.status != .read
        case .read: return !notification.archived && notification.status == .read
        case .archived: return notification.archived
        case .all: return true
        }
    }
}
