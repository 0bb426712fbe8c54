import HeraldCore

/// How live streams and presence behave; the defaults are production's, tests shorten the waits.
public struct LiveSettings: Sendable {
    /// A stream from which nothing has arrived for this long is pinged; one quiet for twice as long
    /// (no pong) is dropped — the idle timeout of a dead peer (`HERALD_STREAM_PING_INTERVAL`).
    public var pingInterval: Duration = .seconds(30)
    /// Bytes of events that may wait for one slow socket: past it the socket is closed (1013) instead
    /// of the wait growing (`HERALD_STREAM_QUEUE_LIMIT`).
    public var queueBytes = 1 << 20
    /// Streams one user may hold open on this process (`HERALD_STREAM_MAX_PER_USER`): a new one past
    /// it closes the user's oldest (1008, "too many streams") — an app opened again on a device whose
    /// old connection has not died yet must still get its stream.
    public var maximumStreamsPerUser = 10
    /// After closing a slow socket, its connection is cut if the close handshake has not finished by
    /// then (a reader that never reads would otherwise hold it forever).
    public var closeGrace: Duration = .seconds(5)
    /// How often this process renews its presence (`HERALD_PRESENCE_HEARTBEAT`); its sockets stop
    /// counting `presenceTTL` after the last renewal (`HERALD_PRESENCE_TTL`), e.g. when it was killed.
    public var heartbeat: Duration = .seconds(10)
    public var presenceTTL: Duration = .seconds(30)
    /// Which offline devices get refresh pushes (`HERALD_PUSH_MULTI_DEVICE`).
    public var multiDevice: MultiDevicePolicy = .allOffline

    public init() {}
}
