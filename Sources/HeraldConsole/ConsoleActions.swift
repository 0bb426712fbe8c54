/// The admin API's actions the console performs through the API's own code, so that what a console
/// form does is exactly what the API request does: same validation, same errors, same side effects
/// (waking the fan-out or the erasure service).
public struct ConsoleActions: Sendable {
    /// What the API answered: its status and JSON body.
    public struct Answer: Sendable, Equatable {
        public var status: Int
        public var body: [UInt8]

        public init(status: Int, body: [UInt8]) {
            self.status = status
            self.body = body
        }

        public var succeeded: Bool { (200..<300).contains(status) }
    }

    /// `POST /v1/notifications` with this JSON body.
    public var sendNotification: @Sendable ([UInt8]) async throws -> Answer
    /// `POST /v1/scheduled-sends` with this JSON body.
    public var scheduleSend: @Sendable ([UInt8]) async throws -> Answer
    /// `DELETE /v1/scheduled-sends/{scheduled_send_id}`.
    public var cancelScheduledSend: @Sendable (String) async throws -> Answer
    /// `DELETE /v1/users/{user_id}`.
    public var eraseUser: @Sendable (String) async throws -> Answer
    /// `PUT /v1/apns/credentials/{name}` with this JSON body.
    public var putCredential: @Sendable (String, [UInt8]) async throws -> Answer
    /// `DELETE /v1/apns/credentials/{name}`.
    public var deleteCredential: @Sendable (String) async throws -> Answer
    /// `PUT /v1/fcm/credentials/{name}` with this key file.
    public var putFCMCredential: @Sendable (String, [UInt8]) async throws -> Answer
    /// `DELETE /v1/fcm/credentials/{name}`.
    public var deleteFCMCredential: @Sendable (String) async throws -> Answer
    /// `GET /v1/webpush/key`.
    public var webPushKey: @Sendable () async throws -> Answer
    /// `PUT /v1/webpush/key` with this JSON body.
    public var putWebPushKey: @Sendable ([UInt8]) async throws -> Answer
    /// `PUT /v1/topics/{topic_id}` with this JSON body.
    public var putTopic: @Sendable (String, [UInt8]) async throws -> Answer
    /// `POST /v1/topics/{topic_id}/subscribers` (`add`) or `…/subscribers/remove` with this JSON body.
    public var changeSubscribers: @Sendable (String, [UInt8], _ add: Bool) async throws -> Answer
    /// `herald fixtures load` for uploaded files (name, content): one line per item loaded, or the
    /// problem that stopped it (then nothing was loaded).
    public var loadFixtures: @Sendable ([(name: String, bytes: [UInt8])]) async throws -> (items: [String], problem: String?)
    /// The admin API's limit on failed authentications from one address, which sign-in shares: before
    /// a sign-in is checked, the seconds to wait (`nil`: go ahead); and a failed one, counted.
    public var admitSignIn: @Sendable (_ address: String?) async -> Int?
    public var signInFailed: @Sendable (_ address: String?) -> Void

    public init(
        sendNotification: @escaping @Sendable ([UInt8]) async throws -> Answer,
        scheduleSend: @escaping @Sendable ([UInt8]) async throws -> Answer,
        cancelScheduledSend: @escaping @Sendable (String) async throws -> Answer,
        eraseUser: @escaping @Sendable (String) async throws -> Answer,
        putCredential: @escaping @Sendable (String, [UInt8]) async throws -> Answer,
        deleteCredential: @escaping @Sendable (String) async throws -> Answer,
        putFCMCredential: @escaping @Sendable (String, [UInt8]) async throws -> Answer,
        deleteFCMCredential: @escaping @Sendable (String) async throws -> Answer,
        webPushKey: @escaping @Sendable () async throws -> Answer,
        putWebPushKey: @escaping @Sendable ([UInt8]) async throws -> Answer,
        putTopic: @escaping @Sendable (String, [UInt8]) async throws -> Answer,
        changeSubscribers: @escaping @Sendable (String, [UInt8], _ add: Bool) async throws -> Answer,
        loadFixtures: @escaping @Sendable ([(name: String, bytes: [UInt8])]) async throws -> (items: [String], problem: String?),
        admitSignIn: @escaping @Sendable (_ address: String?) async -> Int? = { _ in nil },
        signInFailed: @escaping @Sendable (_ address: String?) -> Void = { _ in }
    ) {
        self.sendNotification = sendNotification
        self.scheduleSend = scheduleSend
        self.cancelScheduledSend = cancelScheduledSend
        self.eraseUser = eraseUser
        self.putCredential = putCredential
        self.deleteCredential = deleteCredential
        self.putFCMCredential = putFCMCredential
        self.deleteFCMCredential = deleteFCMCredential
        self.webPushKey = webPushKey
        self.putWebPushKey = putWebPushKey
        self.putTopic = putTopic
        self.changeSubscribers = changeSubscribers
        self.loadFixtures = loadFixtures
        self.admitSignIn = admitSignIn
        self.signInFailed = signInFailed
    }
}
