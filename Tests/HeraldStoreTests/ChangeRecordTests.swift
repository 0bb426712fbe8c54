import HeraldCore
import HeraldStore
import Testing

/// The bookkeeping behind answers from memory: which transactions may have changed what a user's poll
/// shows, from the hints heard, with nothing forgotten that would make an answer look current.
@Suite("Change record")
struct ChangeRecordTests {
    static func heard(_ hint: LiveHint, _ xid: Int64) -> LiveHint.Received {
        LiveHint.Received(hint: hint, transactionID: xid)
    }

    @Test func hintsRoundTripWithTheirTransactionID() throws {
        let hints: [LiveHint] = [
            .notification(.created, id: 7, channelKey: 3, recipients: .users([1, 20, 300])),
            .notification(.deleted, id: 7, channelKey: 3, recipients: .range(after: 0, through: 1_000)),
            .channelState(userKey: 4, channelKey: 3),
            .delivered(userKey: 4, channelKey: 3, notificationIDs: [5, 6]),
            .sessionsRevoked(userKey: 9),
            .channelChanged(channelKey: 3),
            .channelDeleted(url: "team-a", xid: 77),
            .devicesChanged(userKeys: [2, 5]),
            .ping(node: 123, sequence: 4),
        ]
        for hint in hints {
            #expect(LiveHint.Received(payload: hint.payload + " @812") == Self.heard(hint, 812))
        }
        #expect(LiveHint.Received(payload: "s 4 3") == nil, "a payload without its transaction id")
        #expect(LiveHint.Received(payload: "s 4 @3") == nil)
        #expect(LiveHint.Received(payload: "n created 7 3 u @5") == nil)
        #expect(LiveHint.Received(payload: "v 1,x @5") == nil)
    }

    @Test func aNotificationConcernsItsRecipientsInEveryChannel() {
        var record = ChangeRecord(floor: 100, capacity: 100)
        #expect(record.collectionsChanged(userKey: 1, channelKey: 3) == 100)
        record.record(Self.heard(.notification(.created, id: 1, channelKey: 3, recipients: .users([1, 2])), 150))
        // The badge in every channel's answer counts it.
        #expect(record.collectionsChanged(userKey: 1, channelKey: 8) == 150)
        #expect(record.collectionsChanged(userKey: 2, channelKey: 3) == 150)
        #expect(record.collectionsChanged(userKey: 3, channelKey: 3) == 100)
        // Sessions and devices are other matters.
        #expect(record.sessionsChanged(userKey: 1) == 100)
        #expect(record.devicesChanged(userKey: 1) == 100)
        // An older hint heard later never lowers what is known.
        record.record(Self.heard(.channelState(userKey: 1, channelKey: 3), 120))
        #expect(record.collectionsChanged(userKey: 1, channelKey: 3) == 150)
    }

    @Test func spansCoverTheirUsersAndMergeIntoSupersets() {
        var record = ChangeRecord(floor: 0, capacity: 100)
        record.record(Self.heard(.notification(.created, id: 1, channelKey: 3, recipients: .range(after: 0, through: 10)), 50))
        record.record(Self.heard(.notification(.created, id: 1, channelKey: 3, recipients: .range(after: 10, through: 20)), 60))
        #expect(record.collectionsChanged(userKey: 5, channelKey: 9) == 60, "touching spans merge, keeping the newer id")
        #expect(record.collectionsChanged(userKey: 20, channelKey: 9) == 60)
        #expect(record.collectionsChanged(userKey: 21, channelKey: 9) == 0)
        // Far more disjoint spans than are kept: every user of every span stays covered.
        for index in 0..<200 {
            let after = Int64(1_000 + index * 100)
            record.record(
                Self.heard(.notification(.created, id: 2, channelKey: 3, recipients: .range(after: after, through: after + 10)), 70 + Int64(index))
            )
        }
        for index in 0..<200 {
            let user = Int64(1_000 + index * 100 + 5)
            #expect(record.collectionsChanged(userKey: user, channelKey: 3) >= 70 + Int64(index))
        }
    }

    @Test func forgettingAUserRaisesTheFloorAboveWhatWasForgotten() {
        var record = ChangeRecord(floor: 0, capacity: 10)
        for user in Int64(1)...40 {
            record.record(Self.heard(.channelState(userKey: user, channelKey: 1), 1_000 + user))
        }
        // Whatever is no longer kept is vouched for only above the floor, which covers it.
        for user in Int64(1)...40 {
            #expect(record.collectionsChanged(userKey: user, channelKey: 1) >= 1_000 + user)
        }
        #expect(record.floor > 1_000)
    }

    @Test func aDeletedChannelRaisesTheFloorForEveryone() {
        var record = ChangeRecord(floor: 0, capacity: 10)
        record.record(Self.heard(.channelDeleted(url: "gone", xid: 90), 90))
        #expect(record.collectionsChanged(userKey: 1, channelKey: 1) == 90)
        #expect(record.sessionsChanged(userKey: 1) == 90)
        record.record(Self.heard(.channelChanged(channelKey: 4), 95))
        #expect(record.collectionsChanged(userKey: 1, channelKey: 4) == 95)
        #expect(record.collectionsChanged(userKey: 1, channelKey: 5) == 90)
    }

    @Test func generationsKeepTheRecentlyUsedAndStayInBounds() {
        var cache = Generations<Int, Int>(capacity: 10)
        for key in 0..<5 { cache.set(key, for: key) }
        // The fifth fills the current generation: they move to the older one together.
        #expect(cache.count == 5)
        _ = cache.value(for: 0)  // used again: current
        for key in 5..<10 { cache.set(key, for: key) }
        #expect(cache.peek(0) == 0)
        #expect(cache.peek(1) == nil, "untouched for a generation")
        for key in 10..<1_000 { cache.set(key, for: key) }
        #expect(cache.count <= 10)
    }
}
