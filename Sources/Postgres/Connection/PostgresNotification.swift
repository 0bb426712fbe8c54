/// A notification delivered by `NOTIFY channel, 'payload'`.
public struct PostgresNotification: Sendable, Equatable {
    public var channel: String
    public var payload: String
    /// The server process that sent it.
    public var senderPID: Int32

    public init(channel: String, payload: String, senderPID: Int32) {
        self.channel = channel
        self.payload = payload
        self.senderPID = senderPID
    }
}
