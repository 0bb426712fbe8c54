import Testing

@testable import Postgres

/// The pool's rules on their own: connections are numbers, waiters names; no database, no threads.
@Suite("Pool state machine")
struct PoolStateMachineTests {
    typealias Machine = PoolStateMachine<Int, String>

    func grant(_ action: Machine.LeaseAction) -> Machine.Grant? {
        if case .grant(let grant) = action { return grant }
        return nil
    }

    func isCreate(_ action: Machine.LeaseAction) -> Bool {
        if case .grant(.create) = action { return true }
        return false
    }

    func isWait(_ action: Machine.LeaseAction) -> Bool {
        if case .wait = action { return true }
        return false
    }

    @Test func opensUpToTheLimitThenWaits() {
        var pool = Machine(maximumConnections: 2)
        #expect(isCreate(pool.lease()))
        #expect(isCreate(pool.lease()))
        #expect(isWait(pool.lease()))
        #expect(pool.open == 2)
        #expect(pool.waiting == 0, "a lease that would not wait is not queued")
    }

    @Test func reusesTheMostRecentlyReturnedIdleConnectionBeforeOpeningAnother() {
        var pool = Machine(maximumConnections: 3)
        _ = pool.lease()
        _ = pool.lease()
        #expect(isPooled(pool.release(1, isUsable: true)))
        #expect(isPooled(pool.release(2, isUsable: true)))
        guard case .existing(let connection)? = grant(pool.lease()) else {
            Issue.record("expected an idle connection")
            return
        }
        #expect(connection == 2)
        #expect(pool.open == 2, "no new connection while one was idle")
    }

    func isPooled(_ action: Machine.ReleaseAction) -> Bool {
        if case .pooled = action { return true }
        return false
    }

    @Test func waitersAreServedFirstInFirstOut() {
        var pool = Machine(maximumConnections: 1)
        _ = pool.lease()
        #expect(isWait(pool.enqueue(id: 1, "first")))
        #expect(isWait(pool.enqueue(id: 2, "second")))
        #expect(pool.waiting == 2)
        guard case .handOff(let first) = pool.release(7, isUsable: true) else {
            Issue.record("expected a hand-off")
            return
        }
        #expect(first == "first")
        guard case .handOff(let second) = pool.release(7, isUsable: true) else {
            Issue.record("expected a hand-off")
            return
        }
        #expect(second == "second")
        #expect(isPooled(pool.release(7, isUsable: true)))
        #expect(pool.idle == [7])
    }

    @Test func aBrokenConnectionIsClosedAndItsSlotGoesToTheNextWaiter() {
        var pool = Machine(maximumConnections: 1)
        _ = pool.lease()
        _ = pool.enqueue(id: 1, "waiting")
        guard case .close = pool.release(3, isUsable: false) else {
            Issue.record("a broken connection must be closed")
            return
        }
        #expect(pool.idle.isEmpty)
        guard case .handSlot(let waiter) = pool.connectionClosed() else {
            Issue.record("the freed slot must go to the waiter")
            return
        }
        #expect(waiter == "waiting")
        #expect(pool.open == 1, "the slot stays counted: the waiter opens a connection in it")
        guard case ClosedAction.none = pool.connectionClosed() else {
            Issue.record("with nobody waiting the pool shrinks")
            return
        }
        #expect(pool.open == 0)
        #expect(isCreate(pool.lease()))
    }

    typealias ClosedAction = Machine.ClosedAction

    @Test func aCancelledWaiterLeavesTheQueueAndIsNotServed() {
        var pool = Machine(maximumConnections: 1)
        _ = pool.lease()
        _ = pool.enqueue(id: 1, "gone")
        _ = pool.enqueue(id: 2, "stays")
        #expect(pool.cancel(id: 1) == "gone")
        #expect(pool.cancel(id: 1) == nil, "cancelled once")
        guard case .handOff(let waiter) = pool.release(5, isUsable: true) else {
            Issue.record("expected a hand-off")
            return
        }
        #expect(waiter == "stays")
        #expect(pool.cancel(id: 2) == nil, "already served")
    }

    @Test func shutdownFailsWaitersClosesIdleConnectionsAndDrainsAsLeasesReturn() {
        var pool = Machine(maximumConnections: 3)
        _ = pool.lease()
        _ = pool.lease()
        _ = pool.lease()
        _ = pool.release(1, isUsable: true)
        _ = pool.enqueue(id: 9, "late")  // takes the idle connection
        _ = pool.enqueue(id: 10, "waiting")
        _ = pool.release(2, isUsable: true)  // to "waiting"
        _ = pool.enqueue(id: 11, "never")
        let (failed, idle, isDrained) = pool.shutdown()
        #expect(failed == ["never"])
        #expect(idle.isEmpty)
        #expect(!isDrained)
        #expect(pool.open == 3)
        guard case .shutDown = pool.lease(), case .shutDown = pool.enqueue(id: 12, "after") else {
            Issue.record("nothing is granted after shutdown")
            return
        }
        #expect(pool.waiting == 0)
        // Every connection that comes back is closed, even a healthy one; the last close drains.
        for connection in [1, 2, 3] {
            guard case .close = pool.release(connection, isUsable: true) else {
                Issue.record("returned after shutdown: close it")
                return
            }
            let closed = pool.connectionClosed()
            if connection == 3 {
                guard case .drained = closed else {
                    Issue.record("the last close drains the pool")
                    return
                }
            } else if case .drained = closed {
                Issue.record("drained too early")
            }
        }
        #expect(pool.open == 0)
    }

    @Test func shutdownOfAnIdlePoolIsDrainedAtOnce() {
        var pool = Machine(maximumConnections: 2)
        _ = pool.lease()
        _ = pool.release(4, isUsable: true)
        let (failed, idle, isDrained) = pool.shutdown()
        #expect(failed.isEmpty)
        #expect(idle == [4])
        #expect(isDrained)
    }
}
