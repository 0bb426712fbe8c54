import Foundation
import HTTPTypes
import HeraldConsole
import HeraldCore
import HeraldStore
import NIOCore

extension ConsoleActions {
    /// The console's actions, each the admin route's own code from its decoded input on: the console's
    /// forms only build the input.
    static func api(
        notifications: NotificationsController,
        schedules: ScheduledSendsController,
        users: UsersController,
        apns: APNsController,
        fcm: FCMController,
        webPush: WebPushController,
        topics: TopicsController,
        fixtures: FixtureLoader,
        limits: RequestLimits
    ) -> ConsoleActions {
        ConsoleActions(
            sendNotification: { json in
                try await Answer.api {
                    let body = try RequestBody.decode(SendNotificationRequest.self, from: Data(json))
                    switch try await notifications.send(body, idempotency: nil) {
                    case .created(_, let response, _), .replayed(let response):
                        return Answer(status: response.status, body: response.body)
                    case .keyReused:
                        preconditionFailure("a send without an idempotency key cannot reuse one")
                    }
                }
            },
            scheduleSend: { json in
                try await Answer.api {
                    let body = try RequestBody.decode(ScheduledSendRequest.self, from: Data(json))
                    switch try await schedules.schedule(body, idempotency: nil, now: Date()) {
                    case .created(_, let response), .replayed(let response):
                        return Answer(status: response.status, body: response.body)
                    case .keyReused:
                        preconditionFailure("a scheduling without an idempotency key cannot reuse one")
                    }
                }
            },
            cancelScheduledSend: { id in
                try await Answer.api { try Answer(.ok, try await schedules.cancel(try ScheduledSendsController.id(id))) }
            },
            eraseUser: { userID in
                try await Answer.api {
                    if let problem = UserID.problem(with: userID) { throw APIError(.badRequest, code: "invalid_user_id", message: problem) }
                    return try Answer(.accepted, UsersController.ErasureBody(try await users.startErasure(userID)))
                }
            },
            putCredential: { name, json in
                try await Answer.api {
                    let upload = try RequestBody.decode(APNsController.Upload.self, from: Data(json))
                    let (stored, created) = try await apns.put(name: try APNsController.name(name), upload: upload)
                    return try Answer(created ? .created : .ok, APNsController.CredentialBody(stored))
                }
            },
            deleteCredential: { name in
                try await Answer.api {
                    guard try await apns.delete(try APNsController.name(name)) else { throw APNsController.credentialNotFound }
                    return Answer(status: 204, body: [])
                }
            },
            putFCMCredential: { name, keyFile in
                try await Answer.api {
                    let (stored, created) = try await fcm.put(name: try APNsController.name(name), keyFile: keyFile)
                    return try Answer(created ? .created : .ok, FCMController.CredentialBody(stored))
                }
            },
            deleteFCMCredential: { name in
                try await Answer.api {
                    guard try await fcm.delete(try APNsController.name(name)) else { throw FCMController.credentialNotFound }
                    return Answer(status: 204, body: [])
                }
            },
            webPushKey: {
                try await Answer.api { try Answer(.ok, try await webPush.key()) }
            },
            putWebPushKey: { json in
                try await Answer.api {
                    try Answer(.ok, try await webPush.replace(RequestBody.decode(WebPushController.Upload.self, from: Data(json))))
                }
            },
            putTopic: { id, json in
                try await Answer.api {
                    let (body, created) = try await topics.put(
                        try TopicsController.topicID(id),
                        try RequestBody.decode(TopicsController.Definition.self, from: Data(json))
                    )
                    return try Answer(created ? .created : .ok, body)
                }
            },
            changeSubscribers: { id, json, add in
                try await Answer.api {
                    let body = try RequestBody.decode(TopicsController.Subscribers.self, from: Data(json))
                    return try Answer(.ok, try await topics.changeSubscribers(try TopicsController.topicID(id), body, add: add))
                }
            },
            loadFixtures: { files in
                do {
                    let report = try await fixtures.load(files: files.map { ($0.name, Data($0.bytes)) })
                    return (report.items.map { "\($0.kind) \($0.id): \($0.outcome)" }, nil)
                } catch let problem as FixtureLoader.Problem {
                    return ([], problem.description)
                }
            },
            admitSignIn: { address in
                do {
                    try await limits.admitAdmin(address: address)
                    return nil
                } catch let error as APIError {
                    return error.retryAfter ?? 1
                } catch {
                    return 1
                }
            },
            signInFailed: { address in limits.authenticationFailed(address: address) }
        )
    }
}

extension HeraldRequestContext: ConsoleRequestContext {
    public var clientAddress: String? { remoteAddress?.ipAddress }
}

extension ConsoleActions.Answer {
    init(_ status: HTTPResponse.Status, _ body: some Encodable) throws {
        self.init(status: Int(status.code), body: Array(try JSONEncoder().encode(body)))
    }

    /// The answer `work` makes, or the API's error answer for the `APIError` it throws.
    static func api(_ work: () async throws -> Self) async throws -> Self {
        do {
            return try await work()
        } catch let error as APIError {
            return Self(status: Int(error.status.code), body: Array(error.body.readableBytesView))
        }
    }
}
