/// What a process has heard changed since its listener began, by transaction id: for each user, each
/// channel and spans of users, the newest transaction whose hint named them.
///
/// Why transaction ids are enough: an answer read from a snapshot reflects every transaction below the
/// snapshot's horizon (those had all ended), and a change the snapshot did not reflect belongs to a
/// transaction at or above the horizon, whose hint — sent at its commit — is heard sooner or later.
/// So an answer stays the one the database would give for as long as no hint at or above its horizon
/// has named what it shows; and a hint heard *before* the answer is read is weighed the same way, which
/// closes the race between reading an answer and keeping it. Transactions that committed before the
/// listener began were never heard: `floor` starts above them.
///
/// Bounded: users are kept in `Generations`; a user forgotten to stay in bounds raises `floor` to the
/// newest transaction that named them, so forgetting only ever makes answers less usable.
public struct ChangeRecord: Sendable {
    /// What kind of thing a hint changed for a user.
    public struct UserChanges: Sendable, Equatable {
        /// Their collections' contents, states and unread counts (the badge spans every channel).
        public var collections: Int64 = 0
        /// Their sessions.
        public var sessions: Int64 = 0
        /// Their devices' push state.
        public var devices: Int64 = 0

        var newest: Int64 { max(collections, sessions, devices) }
    }

    /// A span of user keys `(after, through]` whose collections changed by transaction `xid`.
    struct Span: Sendable, Equatable {
        var after: Int64
        var through: Int64
        var xid: Int64
    }

    /// Nothing at or below this transaction id is vouched for.
    public private(set) var floor: Int64
    private var users: Generations<Int64, UserChanges>
    private var channels: [Int64: Int64] = [:]
    /// Sorted by `after`, disjoint.
    private var spans: [Span] = []
    /// More spans than this and the two closest merge (a superset: safe).
    static let maximumSpans = 32

    public init(floor: Int64, capacity: Int) {
        self.floor = floor
        self.users = Generations(capacity: capacity)
    }

    /// Who a hint concerns, for whoever waits on them.
    public enum Concerned: Sendable, Equatable {
        case nobody
        case users([Int64])
        case span(after: Int64, through: Int64)
        case channel(Int64)
        case everyone
    }

    /// Records a heard hint; returns whom it concerns.
    @discardableResult
    public mutating func record(_ received: LiveHint.Received) -> Concerned {
        let xid = received.transactionID
        switch received.hint {
        case .notification(_, _, _, .users(let keys)):
            for key in keys { raise(key, xid, \.collections) }
            return .users(keys)
        case .notification(_, _, _, .range(let after, let through)):
            guard after < through else { return .nobody }
            add(Span(after: after, through: through, xid: xid))
            return .span(after: after, through: through)
        case .channelState(let user, _), .delivered(let user, _, _):
            raise(user, xid, \.collections)
            return .users([user])
        case .sessionsRevoked(let user):
            raise(user, xid, \.sessions)
            return .users([user])
        case .devicesChanged(let keys):
            for key in keys { raise(key, xid, \.devices) }
            return .nobody
        case .channelChanged(let channel):
            channels[channel] = max(channels[channel] ?? 0, xid)
            return .channel(channel)
        case .channelDeleted:
            // Its removals name users only in the database: nothing is vouched for below it.
            raiseFloor(xid)
            return .everyone
        case .ping:
            return .nobody
        }
    }

    /// The newest transaction that may have changed what user `userKey`'s poll of channel `channelKey`
    /// answers: the user's collections (every channel's unread counts make the badge), their spans,
    /// the channel, the floor.
    public func collectionsChanged(userKey: Int64, channelKey: Int64) -> Int64 {
        var newest = max(floor, users.peek(userKey)?.collections ?? 0, channels[channelKey] ?? 0)
        for span in spans where userKey > span.after && userKey <= span.through { newest = max(newest, span.xid) }
        return newest
    }

    /// The newest transaction that may have changed `userKey`'s channel list: their collections, or
    /// any channel's definition.
    public func listChanged(userKey: Int64) -> Int64 {
        max(collectionsChanged(userKey: userKey, channelKey: -1), channels.values.max() ?? 0)
    }

    /// The newest transaction that may have revoked a session of `userKey`.
    public func sessionsChanged(userKey: Int64) -> Int64 {
        max(floor, users.peek(userKey)?.sessions ?? 0)
    }

    /// The newest transaction that may have changed the push state of `userKey`'s devices.
    public func devicesChanged(userKey: Int64) -> Int64 {
        max(floor, users.peek(userKey)?.devices ?? 0)
    }

    /// Forgets everything below `xid`: nothing at or below it is vouched for.
    public mutating func raiseFloor(_ xid: Int64) {
        floor = max(floor, xid)
    }

    private mutating func raise(_ user: Int64, _ xid: Int64, _ kind: WritableKeyPath<UserChanges, Int64>) {
        var changes = users.value(for: user) ?? UserChanges()
        changes[keyPath: kind] = max(changes[keyPath: kind], xid)
        let dropped = users.set(changes, for: user)
        if let newest = dropped.values.map(\.newest).max() { raiseFloor(newest) }
    }

    private mutating func add(_ span: Span) {
        var merged = span
        // Spans that overlap or touch the new one become part of it.
        spans.removeAll { other in
            guard other.through >= merged.after && other.after <= merged.through else { return false }
            merged = Span(after: min(other.after, merged.after), through: max(other.through, merged.through), xid: max(other.xid, merged.xid))
            return true
        }
        let index = spans.firstIndex { $0.after > merged.after } ?? spans.endIndex
        spans.insert(merged, at: index)
        while spans.count > Self.maximumSpans {
            // The two neighbours with the smallest gap between them become one.
            let closest = (0..<spans.count - 1).min { spans[$0 + 1].after - spans[$0].through < spans[$1 + 1].after - spans[$1].through }!
            let (left, right) = (spans[closest], spans[closest + 1])
            spans[closest] = Span(after: left.after, through: right.through, xid: max(left.xid, right.xid))
            spans.remove(at: closest + 1)
        }
    }

    /// How many spans are kept (tests look).
    var spanCount: Int { spans.count }
}
