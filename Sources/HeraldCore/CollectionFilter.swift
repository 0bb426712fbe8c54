import Foundation

/// Which of a user's notifications in a channel a collection shows: one category or all, and the
/// notifications of an inbox status. Each filter has its own sync tokens (`hash`): a notification
/// whose state takes it out of a filter leaves that collection by position, as a deletion does.
public struct CollectionFilter: Sendable, Hashable {
    /// The inbox statuses a collection can show.
    public enum Status: String, Sendable, CaseIterable {
        /// Everything not archived, read or unread: the default.
        case inbox
        /// Not archived and not read.
        case unread
        /// Not archived and read.
        case read
        /// Archived only.
        case archived
        /// Everything the user has not deleted.
        case all
    }

    public var category: String?
    public var status: Status

    public init(category: String? = nil, status: Status = .inbox) {
        self.category = category
        self.status = status
    }

    /// The filter every collection had before statuses: all categories, not archived.
    public static let inbox = CollectionFilter()

    /// What a sync token carries of the filter: 0 for none; for the default status, the category's
    /// hash as tokens issued before statuses carry it, so that they stay live.
    public var hash: UInt64 {
        switch (category, status) {
        case (nil, .inbox): return 0
        case (let category?, .inbox): return Self.digest(category)
        case (let category, let status): return Self.digest((category ?? "") + "\u{1F}" + status.rawValue)
        }
    }

    static func digest(_ text: String) -> UInt64 {
        SHA256.digest(Array(text.utf8)).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
