import Foundation
import HeraldCore
import Postgres
import Testing

@testable import HeraldStore

/// The sync protocol's rules on their own: no database, no HTTP.
@Suite("Collection sync rules")
struct CollectionSyncTests {
    let user: Int64 = 7
    let channel = CollectionChannel(key: 3, url: "news", kind: .feed, name: "News", coverURL: "", customType: "")

    func snapshot(horizon: Int64 = 1_000, nextXID: Int64 = 1_001, compactedThrough: Int64 = 0, resetCount: Int32 = 0) -> CollectionStore.Snapshot {
        CollectionStore.Snapshot(
            state: ChannelState(unreadCount: 0, lastReadAt: nil, lastSeenAt: nil, resetCount: resetCount),
            badge: 0,
            horizon: horizon,
            nextXID: nextXID,
            compactedThrough: compactedThrough
        )
    }

    func item(_ id: Int64, xid: Int64) -> CollectionItem {
        let at = Date(timeIntervalSince1970: 1_700_000_000)
        return CollectionItem(
            id: id,
            templateKey: "t",
            templateVersion: 1,
            data: PostgresJSONB("{}"),
            category: "",
            tags: [],
            eventDeadline: nil,
            createdAt: at,
            updatedAt: at,
            status: .sent,
            archived: false,
            actions: PostgresJSONB("[]"),
            actionsDone: [],
            position: xid
        )
    }

    /// A poll holding `count` changes, the first at transaction 500, one a transaction.
    func poll(changes count: Int, snapshot: CollectionStore.Snapshot? = nil) -> CollectionStore.Poll {
        let changes = (0..<count).map { index -> (position: ChangePosition, change: CollectionChange) in
            let xid = Int64(500 + index)
            let id = Int64(index + 1)
            return (ChangePosition(xid: xid, notificationID: id), index % 3 == 2 ? .deleted(id) : .upserted(item(id, xid: xid)))
        }
        return CollectionStore.Poll(channel: channel, snapshot: snapshot ?? self.snapshot(), changes: changes)
    }

    func token(
        at xid: Int64 = 400,
        category: String? = nil,
        status: CollectionFilter.Status = .inbox,
        resetCount: Int32 = 0,
        user: Int64? = nil,
        channel: Int64? = nil
    ) -> SyncToken {
        SyncToken(
            userKey: user ?? self.user,
            channelKey: channel ?? self.channel.key,
            resetCount: resetCount,
            filter: CollectionFilter(category: category, status: status),
            position: .through(xid: xid)
        )
    }

    func page(
        _ token: SyncToken?,
        _ poll: CollectionStore.Poll,
        limit: Int = 10,
        hugeGap: Int = 20,
        category: String? = nil,
        pending: Int? = nil
    ) async throws
        -> (page: CollectionSync.Page?, counted: [Int])
    {
        var counted: [Int] = []
        let page = try await CollectionSync(hugeGap: hugeGap, limit: limit).page(
            after: token,
            userKey: user,
            filter: CollectionFilter(category: category),
            poll: poll
        ) { cap in
            counted.append(cap)
            return min(cap, pending ?? poll.changes.count)
        }
        return (page, counted)
    }

    @Test func aFirstLoadsTokenStandsJustBelowTheHorizon() {
        let token = CollectionSync.firstToken(
            userKey: user,
            channelKey: channel.key,
            filter: CollectionFilter(category: "news"),
            snapshot: snapshot(horizon: 900, resetCount: 2)
        )
        #expect(token.position == .through(xid: 899))
        #expect(token.resetCount == 2)
        #expect(token.filter == CollectionFilter(category: "news").hash)
        #expect(
            CollectionSync.continues(
                token,
                userKey: user,
                channelKey: channel.key,
                filter: CollectionFilter(category: "news"),
                snapshot: snapshot(horizon: 900, resetCount: 2)
            )
        )
    }

    @Test func aTokenContinuesOnlyWhereItWasIssued() {
        let snap = snapshot(horizon: 1_000, nextXID: 1_001, compactedThrough: 300, resetCount: 1)
        func continues(_ token: SyncToken, category: String? = nil, status: CollectionFilter.Status = .inbox) -> Bool {
            CollectionSync.continues(
                token,
                userKey: user,
                channelKey: channel.key,
                filter: CollectionFilter(category: category, status: status),
                snapshot: snap
            )
        }
        #expect(continues(token(resetCount: 1)))
        #expect(!continues(token(resetCount: 1, user: user + 1)), "another user's token")
        #expect(!continues(token(resetCount: 1, channel: channel.key + 1)), "another channel's token")
        #expect(!continues(token(resetCount: 1), category: "news"), "another filter")
        #expect(continues(token(category: "news", resetCount: 1), category: "news"))
        #expect(!continues(token(resetCount: 1), status: .archived), "another status")
        #expect(!continues(token(category: "news", status: .unread, resetCount: 1), category: "news"), "another status")
        #expect(continues(token(category: "news", status: .unread, resetCount: 1), category: "news", status: .unread))
        #expect(continues(token(status: .all, resetCount: 1), status: .all))
        #expect(!continues(token(resetCount: 0)), "issued before an admin reset")
        #expect(!continues(token(at: 299, resetCount: 1)), "below the compaction bound")
        #expect(continues(token(at: 300, resetCount: 1)))
        #expect(!continues(token(at: 1_001, resetCount: 1)), "beyond the newest transaction id")
        #expect(continues(token(at: 1_000, resetCount: 1)))
    }

    /// Tokens issued before statuses carried the category's hash alone (0 for none): the default
    /// status keeps that hash, so they stay live.
    @Test func theDefaultStatusKeepsTheHashOfTokensIssuedBeforeStatuses() {
        #expect(CollectionFilter.inbox.hash == 0)
        let categoryOnly = SHA256.digest(Array("news".utf8)).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(CollectionFilter(category: "news").hash == categoryOnly)
        let hashes = Set(
            CollectionFilter.Status.allCases.flatMap { status in [nil, "news"].map { CollectionFilter(category: $0, status: status).hash } }
        )
        #expect(hashes.count == CollectionFilter.Status.allCases.count * 2, "every filter has its own tokens")
    }

    @Test func noTokenOrADeadOneIsNotLiveAndCountsNothing() async throws {
        let (none, noneCounted) = try await page(nil, poll(changes: 3))
        #expect(none == nil && noneCounted.isEmpty)
        let (reset, resetCounted) = try await page(token(resetCount: 4), poll(changes: 3))
        #expect(reset == nil && resetCounted.isEmpty)
    }

    @Test func aShortAnswerIsCompleteAndMovesTheTokenToTheHorizon() async throws {
        let (page, counted) = try await page(token(), poll(changes: 4, snapshot: snapshot(horizon: 800)))
        let answer = try #require(page)
        #expect(counted.isEmpty, "a short page needs no count")
        #expect(answer.changes.map(\.position.xid) == [500, 501, 502, 503])
        #expect(!answer.hasMore)
        #expect(answer.next.position == .through(xid: 799))
        #expect(answer.next.userKey == user && answer.next.channelKey == channel.key)
    }

    @Test func aQuietPollStillMovesTheTokenUp() async throws {
        let (page, _) = try await page(token(at: 400), poll(changes: 0, snapshot: snapshot(horizon: 450)))
        #expect(try #require(page).next.position == .through(xid: 449))
        // Never backwards, should the horizon be older than the token.
        let (behind, _) = try await self.page(token(at: 400), poll(changes: 0, snapshot: snapshot(horizon: 300, compactedThrough: 0)))
        #expect(try #require(behind).next.position == .through(xid: 400))
    }

    @Test func aFullPageCountsBoundedlyAndStopsAtItsLastChange() async throws {
        // The poll reads limit + 1 changes: a full page shows as one more than the limit.
        let (page, counted) = try await page(token(), poll(changes: 11), limit: 10, hugeGap: 20, pending: 15)
        let answer = try #require(page)
        #expect(counted == [21], "counted up to one past the huge gap")
        #expect(answer.hasMore)
        #expect(answer.changes.count == 10)
        #expect(answer.next.position == ChangePosition(xid: 509, notificationID: 10))
    }

    @Test func aHugeGapIsNotLive() async throws {
        // Found by the count behind a full page…
        let (counted, caps) = try await page(token(), poll(changes: 11), limit: 10, hugeGap: 20, pending: 21)
        #expect(counted == nil && caps == [21])
        // …or already in hand, without a count.
        let (inHand, noCount) = try await page(token(), poll(changes: 25), limit: 30, hugeGap: 20)
        #expect(inHand == nil && noCount.isEmpty)
        // Exactly the huge gap is still live.
        let (atGap, _) = try await page(token(), poll(changes: 11), limit: 10, hugeGap: 20, pending: 20)
        #expect(atGap != nil)
    }

    @Test func deletionsTravelAsTheyCame() async throws {
        let (page, _) = try await page(token(), poll(changes: 3))
        let changes = try #require(page).changes.map(\.change)
        #expect(changes == [.upserted(item(1, xid: 500)), .upserted(item(2, xid: 501)), .deleted(3)])
    }
}
