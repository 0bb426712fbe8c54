/// How the sync protocol is tuned.
public struct SyncSettings: Sendable {
    /// More pending changes than this and a token is no longer live (`is_live: false`).
    public var hugeGap: Int

    public init(hugeGap: Int = 300) {
        self.hugeGap = hugeGap
    }
}
