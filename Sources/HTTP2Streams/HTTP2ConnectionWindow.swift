import NIOCore
import NIOHTTP2

/// Gives back the connection-level HTTP/2 flow-control window for DATA received at the frame level.
///
/// NIOHTTP2's stream multiplexer does this for its users; a handler that reads frames straight from
/// `NIOHTTP2Handler` must do it itself, or the peer stalls once 64 KiB of bodies have arrived over
/// the connection's life. (Stream windows need no care here: every answer APNs or FCM sends is at
/// most 4 KiB, far below a stream's initial 64 KiB.)
public struct HTTP2ConnectionWindow {
    private var unacknowledged = 0
    private let threshold: Int

    /// Sends a WINDOW_UPDATE once `threshold` bytes are unacknowledged (half the default window).
    public init(threshold: Int = 32_768) {
        self.threshold = threshold
    }

    /// Counts a received DATA frame.
    public mutating func received(_ data: HTTP2Frame.FramePayload.Data) {
        unacknowledged += data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
    }

    /// Writes the WINDOW_UPDATE if one is due (not flushed); returns whether it wrote. Call it when a
    /// read burst is complete, not while a frame is being handled: a write into `NIOHTTP2Handler`
    /// delivers its pending events (a `StreamClosedEvent` for the stream whose last frame is in hand)
    /// re-entrantly.
    public mutating func writeUpdate(to context: ChannelHandlerContext) -> Bool {
        guard unacknowledged >= threshold else { return false }
        let frame = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledged))
        unacknowledged = 0
        context.write(NIOAny(frame), promise: nil)
        return true
    }
}
