import DequeModule
import Foundation
import HeraldStore
import Metrics
import NIOCore
import NIOWebSocket
import Synchronization

/// One open live stream: who it is for, and the events waiting to be written to it.
///
/// The hub queues events (`send`) from whatever task handles a hint; the connection's writer task
/// takes them (`next`) and writes them to the socket, suspending while the socket is not writable. So
/// a client that reads slowly makes the queue grow — up to `StreamSettings.queueEvents` events or
/// `queueBytes` bytes; past that the queue is dropped, a close frame (1013, "slow consumer") is the
/// last thing queued, and the connection is cut after `closeGrace` if it has not closed by then. The
/// memory one socket can hold is therefore bounded whatever its client does.
final class StreamConnection: Sendable {
    /// What the writer task does next.
    enum Outgoing: Sendable, Equatable {
        case text(String)
        case close(WebSocketErrorCode, reason: String)
    }

    let id: Int64
    let user: AuthenticatedUser
    let deviceID: Int64?
    /// The session the stream was opened with (hex of its hash), and when it expires.
    let sessionHash: String
    let sessionExpiresAt: Date
    let channel: any NIOCore.Channel
    private let limits: (events: Int, bytes: Int, grace: Duration)
    private let state = Mutex(State())

    private struct State {
        var queue: Deque<Outgoing> = []
        var bytes = 0
        var peakBytes = 0
        var waiter: CheckedContinuation<Outgoing?, Never>?
        /// Set once a close is queued: nothing more is accepted.
        var closing = false
        var finished = false
    }

    init(id: Int64, user: AuthenticatedUser, deviceID: Int64?, sessionHash: String, sessionExpiresAt: Date, channel: any NIOCore.Channel, settings: StreamSettings) {
        self.id = id
        self.user = user
        self.deviceID = deviceID
        self.sessionHash = sessionHash
        self.sessionExpiresAt = sessionExpiresAt
        self.channel = channel
        self.limits = (settings.queueEvents, settings.queueBytes, settings.closeGrace)
    }

    var presence: StreamPresence {
        StreamPresence(id: id, userKey: user.key, deviceID: deviceID)
    }

    /// True once a close is queued (slow consumer, revoked or expired session, shutdown).
    var isClosing: Bool {
        state.withLock { $0.closing }
    }

    /// The most bytes ever queued at once (tests hold it to the bound).
    var peakQueuedBytes: Int {
        state.withLock { $0.peakBytes }
    }

    /// Queues an event. Returns false when the connection is closing, or when this event would have
    /// taken the queue past its bounds — the connection then closes as a slow consumer.
    @discardableResult
    func send(_ text: String) -> Bool {
        enum Action { case queued, rejected, wake(CheckedContinuation<Outgoing?, Never>), overflow }
        let action: Action = state.withLock { state in
            guard !state.closing else { return .rejected }
            let size = text.utf8.count
            if state.queue.count + 1 > limits.events || state.bytes + size > limits.bytes {
                return .overflow
            }
            if let waiter = state.waiter {
                state.waiter = nil
                return .wake(waiter)
            }
            state.queue.append(.text(text))
            state.bytes += size
            state.peakBytes = max(state.peakBytes, state.bytes)
            return .queued
        }
        switch action {
        case .queued:
            return true
        case .rejected:
            return false
        case .wake(let waiter):
            waiter.resume(returning: .text(text))
            return true
        case .overflow:
            close(.unknown(1013), reason: "slow consumer")
            return false
        }
    }

    /// Drops whatever is queued and queues a close frame; the connection is cut after the grace
    /// period if the client has not completed the close handshake by then. Later calls do nothing.
    func close(_ code: WebSocketErrorCode, reason: String) {
        let (first, waiter): (Bool, CheckedContinuation<Outgoing?, Never>?) = state.withLock { state in
            guard !state.closing else { return (false, nil) }
            state.closing = true
            state.queue.removeAll()
            state.bytes = 0
            if let waiter = state.waiter {
                state.waiter = nil
                state.finished = true
                return (true, waiter)
            }
            state.queue.append(.close(code, reason: reason))
            return (true, nil)
        }
        guard first else { return }
        waiter?.resume(returning: .close(code, reason: reason))
        Counter(label: "herald_stream_closes_total", dimensions: [("reason", reason)]).increment()
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: TimeAmount(limits.grace)) {
            channel.close(promise: nil)
        }
    }

    /// The next thing to write; `nil` once a close was taken or the task is cancelled.
    func next() async -> Outgoing? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outgoing?, Never>) in
                let ready: Outgoing?? = state.withLock { state in
                    if state.finished || Task.isCancelled { return .some(nil) }
                    if let first = state.queue.popFirst() {
                        if case .text(let text) = first { state.bytes -= text.utf8.count }
                        if case .close = first { state.finished = true }
                        return .some(first)
                    }
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.finished = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }
}
