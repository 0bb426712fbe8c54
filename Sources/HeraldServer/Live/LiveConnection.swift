import Foundation
import HeraldStore
import Metrics
import NIOCore
import NIOWebSocket
import Synchronization

/// One open live stream: who it is for, and the way events are written to its socket.
///
/// Events go straight into the connection's NIO channel (no task per stream: an idle stream costs
/// only its channel and handlers, see docs/decisions/2026-11-22-websockets-served-by-channel-handlers.md). What NIO holds for a socket that has not
/// taken it yet is counted; a client that reads so slowly that more than `LiveSettings.queueBytes`
/// wait is closed as a slow consumer (1013) and cut after `closeGrace` if it does not finish the close
/// handshake — the memory one socket can hold is bounded whatever its client does.
final class LiveConnection: Sendable {
    let id: Int64
    let user: AuthenticatedUser
    let deviceID: Int64?
    /// The session the stream was opened with (hex of its hash), and when it expires.
    let sessionHash: String
    let sessionExpiresAt: Date
    let channel: any NIOCore.Channel
    private let limits: (bytes: Int, grace: Duration)
    private let state = Mutex(State())

    private struct State {
        var pendingBytes = 0
        var peakBytes = 0
        /// We sent a close frame: nothing more is written, and the peer's close ends the connection.
        var closing = false
        /// Why we closed it (the close frame's reason), once we did.
        var closeReason: String?
        /// Frames written before `ready` went out, sent right after it: `ready` is always the first.
        var heldUntilReady: [(frame: WebSocketFrame, size: Int)]? = []
        /// The attempt to record the stream's presence is over (it succeeded or failed); its end
        /// waits for this, so presence is never recorded after it was removed.
        var presenceSettled = false
        var settleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    init(id: Int64, client: LiveClient, channel: any NIOCore.Channel, settings: LiveSettings) {
        self.id = id
        self.user = client.user
        self.deviceID = client.deviceID
        self.sessionHash = client.sessionHash
        self.sessionExpiresAt = client.sessionExpiresAt
        self.channel = channel
        self.limits = (settings.queueBytes, settings.closeGrace)
    }

    var presence: StreamPresence {
        StreamPresence(id: id, userKey: user.key, deviceID: deviceID)
    }

    /// True once a close frame was sent (slow consumer, revoked or expired session, shutdown).
    var isClosing: Bool {
        state.withLock { $0.closing }
    }

    /// The reason of the close frame the server sent, if it sent one (tests read it here: a peer that
    /// is still sending when the connection is cut may never read the frame).
    var closeReason: String? {
        state.withLock { $0.closeReason }
    }

    /// The most bytes ever waiting for this socket at once (tests hold it to the bound).
    var peakQueuedBytes: Int {
        state.withLock { $0.peakBytes }
    }

    /// Writes an event. Returns false when the stream is closing, or when this event would have taken
    /// what waits for the socket past the bound — the stream then closes as a slow consumer.
    @discardableResult
    func send(_ text: String) -> Bool {
        write(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text)), size: text.utf8.count)
    }

    /// Sends `ready`, then whatever was written before it, in order.
    func sendReady(_ text: String) {
        let size = text.utf8.count
        state.withLock { state in
            guard !state.closing, let held = state.heldUntilReady else { return }
            state.heldUntilReady = nil
            state.pendingBytes += size
            state.peakBytes = max(state.peakBytes, state.pendingBytes)
            enqueue(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text)), size: size)
            for (frame, size) in held { enqueue(frame, size: size) }
        }
    }

    /// Answers the client's ping, counted like an event: a client that pings without reading fills
    /// the same bound and is closed as a slow consumer, instead of its pongs piling up. A pong is a
    /// control frame, not an event: it goes at once, before `ready` too (a client whose heartbeat
    /// went unanswered while its presence was being recorded would give up on the stream).
    @discardableResult
    func pong(_ data: ByteBuffer) -> Bool {
        // The frame's two header bytes count too, so that even empty pings add up.
        write(WebSocketFrame(fin: true, opcode: .pong, data: data), size: data.readableBytes + 2, untilReady: false)
    }

    private func write(_ frame: WebSocketFrame, size: Int, untilReady: Bool = true) -> Bool {
        enum Verdict { case write, refuse, overflow }
        let verdict: Verdict = state.withLock { state in
            if state.closing { return .refuse }
            if state.pendingBytes + size > limits.bytes { return .overflow }
            state.pendingBytes += size
            state.peakBytes = max(state.peakBytes, state.pendingBytes)
            if untilReady, state.heldUntilReady != nil {
                state.heldUntilReady?.append((frame, size))
            } else {
                enqueue(frame, size: size)
            }
            return .write
        }
        switch verdict {
        case .refuse:
            return false
        case .overflow:
            close(.unknown(1013), reason: "slow consumer")
            return false
        case .write:
            return true
        }
    }

    /// Hands a frame to the event loop. Called under the lock, so frames go out in the order they
    /// were written; `execute` never runs the work inline, so the lock is never taken again from
    /// within.
    private func enqueue(_ frame: WebSocketFrame, size: Int) {
        let channel = self.channel
        channel.eventLoop.execute {
            channel.writeAndFlush(frame).whenComplete { _ in
                self.state.withLock { $0.pendingBytes -= size }
            }
        }
    }

    /// Sends a close frame (once) and cuts the connection after the grace period if the client has not
    /// answered it by then.
    func close(_ code: WebSocketErrorCode, reason: String) {
        var data = ByteBuffer()
        data.write(webSocketErrorCode: code)
        data.writeString(reason)
        // Queued like any frame, so that none written before goes out after it (RFC 6455 §5.5.1);
        // what waited for `ready` is dropped.
        let first = state.withLock { state in
            guard !state.closing else { return false }
            state.closing = true
            state.closeReason = reason
            if let held = state.heldUntilReady {
                state.pendingBytes -= held.reduce(0) { $0 + $1.size }
                state.heldUntilReady = []
            }
            enqueue(WebSocketFrame(fin: true, opcode: .connectionClose, data: data), size: 0)
            return true
        }
        guard first else { return }
        Counter(label: "herald_stream_closes_total", dimensions: [("reason", reason)]).increment()
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: TimeAmount(limits.grace)) {
            channel.close(promise: nil)
        }
    }

    /// Marks the presence attempt over and releases whoever waits for it.
    func settlePresence() {
        let waiters = state.withLock { state in
            state.presenceSettled = true
            defer { state.settleWaiters = [] }
            return state.settleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func waitUntilPresenceSettled() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let settled = state.withLock { state in
                if !state.presenceSettled { state.settleWaiters.append(continuation) }
                return state.presenceSettled
            }
            if settled { continuation.resume() }
        }
    }

    /// The peer sent a close frame: returns true when it answers ours (the connection can go now);
    /// false when it started the handshake (the caller echoes it).
    func peerClosed() -> Bool {
        state.withLock { state in
            defer { state.closing = true }
            return state.closing
        }
    }
}
