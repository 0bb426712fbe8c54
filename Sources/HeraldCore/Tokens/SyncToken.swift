import Foundation

/// A position in one user's change stream of one channel, as `(change_xid, notification_id)`: the id
/// of the transaction that made a recipient copy's latest change, then the notification id.
public struct ChangePosition: Sendable, Hashable, Comparable {
    public var xid: Int64
    public var notificationID: Int64

    public init(xid: Int64, notificationID: Int64) {
        self.xid = xid
        self.notificationID = notificationID
    }

    /// Every change of transaction `xid` and before.
    public static func through(xid: Int64) -> ChangePosition {
        ChangePosition(xid: xid, notificationID: .max)
    }

    public static func < (lhs: ChangePosition, rhs: ChangePosition) -> Bool {
        (lhs.xid, lhs.notificationID) < (rhs.xid, rhs.notificationID)
    }
}

/// The token an incremental sync continues from: whose collection it belongs to, the filter it was
/// issued for, and the position reached. Opaque to clients: sealed by `TokenSeal` (a format byte and
/// an HMAC-SHA256 tag under a server key), so it cannot be forged, edited or passed off as another kind.
public struct SyncToken: Sendable, Equatable {
    public var userKey: Int64
    public var channelKey: Int64
    /// The channel state's reset count when issued: an admin reset ends every older token.
    public var resetCount: Int32
    /// The collection's filter, as `CollectionFilter.hash` (0 for none).
    public var filter: UInt64
    public var position: ChangePosition

    public init(userKey: Int64, channelKey: Int64, resetCount: Int32, filter: CollectionFilter, position: ChangePosition) {
        self.userKey = userKey
        self.channelKey = channelKey
        self.resetCount = resetCount
        self.filter = filter.hash
        self.position = position
    }

    /// The format byte (see `TokenSeal`).
    static let version: UInt8 = 1
    static let payloadLength = 1 + 8 + 8 + 4 + 8 + 8 + 8

    /// The token as URL-safe base64 text.
    public func encoded(key: [UInt8]) -> String {
        var payload = TokenPayload(format: Self.version)
        payload.append(userKey)
        payload.append(channelKey)
        payload.append(resetCount)
        payload.append(filter)
        payload.append(position.xid)
        payload.append(position.notificationID)
        return TokenSeal.seal(payload, key: key)
    }

    /// Parses and authenticates a token; `nil` when it is malformed, of another version, or its tag
    /// does not match (forged or edited).
    public init?(decoding text: String, key: [UInt8]) {
        guard var payload = TokenSeal.open(text, key: key, format: Self.version, payloadLength: Self.payloadLength) else { return nil }
        userKey = payload.read(Int64.self)
        channelKey = payload.read(Int64.self)
        resetCount = payload.read(Int32.self)
        filter = payload.read(UInt64.self)
        position = ChangePosition(xid: payload.read(Int64.self), notificationID: payload.read(Int64.self))
    }
}
