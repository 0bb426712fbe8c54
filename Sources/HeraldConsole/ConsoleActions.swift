/// The admin API's actions the console performs through the API's own code, so that what a console
/// form does is exactly what the request it shows as `curl` does: same validation, same errors.
public struct ConsoleActions: Sendable {
    /// What the API answered: its status and JSON body.
    public struct Answer: Sendable, Equatable {
        public var status: Int
        public var body: [UInt8]

        public init(status: Int, body: [UInt8]) {
            self.status = status
            self.body = body
        }
    }

    /// `POST /v1/notifications` with this JSON body.
    public var sendNotification: @Sendable ([UInt8]) async throws -> Answer

    public init(sendNotification: @escaping @Sendable ([UInt8]) async throws -> Answer) {
        self.sendNotification = sendNotification
    }
}
