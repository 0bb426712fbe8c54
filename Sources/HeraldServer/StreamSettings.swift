import HeraldCore

/// How live streams and presence behave; the defaults are production's, tests shorten the waits.
public struct StreamSettings: Sendable {
    /// A ping goes out this often; a client that has not answered the previous one by then is closed
    /// (the idle timeout of a dead peer) (`HERALD_STREAM_PING_INTERVAL`).
    public var pingInterval: Duration = .seconds(30)
    /// Events waiting for one slow socket, at most: past either bound the socket is closed (1013)
    /// instead of the queue growing (`HERALD_STREAM_QUEUE_LIMIT`, bytes).
    public var queueEvents = 1_000
    public var queueBytes = 1 << 20
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
