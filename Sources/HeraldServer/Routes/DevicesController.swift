import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import WebPush

/// The user's devices (`/v1/me/devices`) — iPhones (APNs), Android phones (FCM) and browsers (Web
/// Push) — which refresh and alert pushes go to.
struct DevicesController: Sendable {
    let devices: DeviceStore
    let webPushHosts: WebPushHosts

    func register(in routes: RouteRegistry) {
        routes.add(.put, "/v1/me/devices/{device_token}", access: .user) { request, context in
            let user = try CollectionController.user(context)
            let token = try Self.token(context)
            guard let body = try await RequestBody.decode(Registration.self, from: request, context: context) else {
                throw APIError(
                    .badRequest,
                    code: "invalid_device",
                    message: "The body must give the device's environment (sandbox or production) and topic (the app's bundle id)."
                )
            }
            guard ["sandbox", "production"].contains(body.environment) else {
                throw APIError(.badRequest, code: "invalid_device", message: "environment must be 'sandbox' or 'production'.")
            }
            guard Self.isTopic(body.topic) else {
                throw APIError(
                    .badRequest,
                    code: "invalid_device",
                    message: "topic must be the app's bundle id (1–255 letters, digits, '.', '-' or '_')."
                )
            }
            let (device, created) = try await devices.register(
                userKey: user.key,
                token: token,
                environment: body.environment,
                topic: body.topic,
                unique: body.unique ?? false
            )
            return EditedResponse(status: created ? .created : .ok, response: DeviceBody(device))
        }
        routes.add(.post, "/v1/me/devices", access: .user) { request, context in
            let user = try CollectionController.user(context)
            guard let body = try await RequestBody.decode(NewDevice.self, from: request, context: context) else {
                throw Self.invalid("The body must name the device's service (apns, fcm or webpush) and its address.")
            }
            let address = try body.address(webPushHosts: webPushHosts)
            let (device, created) = try await devices.register(userKey: user.key, address: address, unique: body.unique ?? false)
            return EditedResponse(status: created ? .created : .ok, response: DeviceBody(device))
        }
        routes.add(.get, "/v1/me/devices", access: .user) { _, context in
            let user = try CollectionController.user(context)
            return DeviceListBody(devices: try await devices.list(userKey: user.key).map(DeviceBody.init))
        }
        routes.add(.delete, "/v1/me/devices/{device_token}", access: .user) { _, context in
            let user = try CollectionController.user(context)
            let text = try context.parameters.require("device_token")
            guard let reference = DeviceReference(text) else {
                throw APIError(.badRequest, code: "invalid_device_token", message: "Name the device by \(DeviceReference.formatDescription).")
            }
            guard try await devices.unregister(userKey: user.key, reference: reference) else {
                throw APIError(.notFound, code: "device_not_found", message: "This user has no such device.")
            }
            return Response(status: .noContent)
        }
        routes.add(.delete, "/v1/me/devices", access: .user) { _, context in
            let user = try CollectionController.user(context)
            return RemovedBody(removed: try await devices.unregisterAll(userKey: user.key))
        }
    }

    struct Registration: Decodable {
        var environment: String
        var topic: String
        var unique: Bool?
    }

    /// The body of `POST /v1/me/devices`: the service, and the address in its terms — an APNs token
    /// with its environment and topic, an FCM registration token (and its project, when the server
    /// has several FCM credentials), or a browser's subscription as `PushSubscription.toJSON()` gives it.
    struct NewDevice: Decodable {
        var service: String?
        var token: String?
        var environment: String?
        var topic: String?
        var projectID: String?
        var subscription: Subscription?
        var unique: Bool?

        struct Subscription: Decodable {
            var endpoint: String?
            var keys: Keys?
            /// Browsers include it (usually null); Herald learns of an expired subscription from its
            /// push service's 404/410.
            var expirationTime: JSONValue?

            struct Keys: Decodable {
                var p256dh: String?
                var auth: String?
            }
        }

        enum CodingKeys: String, CodingKey {
            case service, token, environment, topic, subscription, unique
            case projectID = "project_id"
        }

        /// The address the fields make, checked field by field; a 400 naming the first that is wrong.
        func address(webPushHosts: WebPushHosts) throws -> PushAddress {
            switch service {
            case "apns":
                try Self.absent(projectID, "project_id", service: "apns")
                try Self.absent(subscription, "subscription", service: "apns")
                guard let token, DeviceReference.isToken(token) else {
                    throw invalid("token must be the APNs device token: hex with an even number of digits, 32 to 200 bytes decoded.")
                }
                guard let environment, ["sandbox", "production"].contains(environment) else {
                    throw invalid("environment must be 'sandbox' or 'production'.")
                }
                guard let topic, isTopic(topic) else {
                    throw invalid("topic must be the app's bundle id (1–255 letters, digits, '.', '-' or '_').")
                }
                return .apns(token: token, environment: environment, topic: topic)
            case "fcm":
                try Self.absent(environment, "environment", service: "fcm")
                try Self.absent(topic, "topic", service: "fcm")
                try Self.absent(subscription, "subscription", service: "fcm")
                guard let token, Self.isFCMToken(token) else {
                    throw invalid("token must be the app's FCM registration token (16–1,024 printable ASCII characters).")
                }
                if let projectID, !Self.isProjectID(projectID) {
                    throw invalid("project_id must be a Firebase project id (1–128 lower-case letters, digits and hyphens).")
                }
                return PushAddress(service: .fcm, token: token, topic: projectID ?? "")
            case "webpush":
                try Self.absent(token, "token", service: "webpush")
                try Self.absent(environment, "environment", service: "webpush")
                try Self.absent(topic, "topic", service: "webpush")
                try Self.absent(projectID, "project_id", service: "webpush")
                guard let subscription else {
                    throw invalid("subscription must be the browser's PushSubscription (its toJSON(): endpoint and keys).")
                }
                do throws(WebPushSubscription.Problem) {
                    let checked = try WebPushSubscription(
                        endpoint: subscription.endpoint ?? "",
                        p256dh: subscription.keys?.p256dh ?? "",
                        auth: subscription.keys?.auth ?? ""
                    )
                    guard webPushHosts.allows(checked.endpoint) else {
                        throw WebPushSubscription.Problem(
                            field: "endpoint",
                            message: "is not at a push service this server sends to (\(webPushHosts.domains.joined(separator: ", ")))"
                        )
                    }
                    return PushAddress(
                        service: .webpush,
                        token: checked.endpoint.absoluteString,
                        webPushKeys: .init(p256dh: checked.p256dh, auth: checked.auth)
                    )
                } catch {
                    throw invalid("subscription.\(error.field) \(error.message).")
                }
            case nil:
                throw invalid("service must be 'apns', 'fcm' or 'webpush'.")
            case let other?:
                throw invalid("service must be 'apns', 'fcm' or 'webpush', not '\(other)'.")
            }
        }

        /// A field another service's devices take, given for this one: refused rather than ignored.
        private static func absent(_ value: (some Any)?, _ field: String, service: String) throws {
            if value != nil { throw invalid("\(field) is not a field of \(service) devices.") }
        }

        /// FCM does not document its tokens' form; they are printable ASCII without spaces or quotes.
        static func isFCMToken(_ token: String) -> Bool {
            (16...1024).contains(token.utf8.count)
                && token.utf8.allSatisfy { (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        }

        static func isProjectID(_ text: String) -> Bool {
            (1...128).contains(text.utf8.count)
                && text.utf8.allSatisfy { $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) }
        }
    }

    static func invalid(_ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_device", message: message)
    }

    struct DeviceBody: ResponseEncodable {
        var id: String
        var service: String
        var deviceToken: String
        var environment: String
        var topic: String
        var createdAt: String
        var registeredAt: String
        var lastPushAt: String?
        var lastSyncedAt: String?

        init(_ device: Device) {
            id = String(device.id)
            service = device.service.rawValue
            deviceToken = device.token
            environment = device.environment
            topic = device.topic
            createdAt = RFC3339.string(from: device.createdAt)
            registeredAt = RFC3339.string(from: device.registeredAt)
            lastPushAt = device.lastPushAt.map(RFC3339.string)
            lastSyncedAt = device.lastSyncedAt.map(RFC3339.string)
        }

        enum CodingKeys: String, CodingKey {
            case id, service
            case deviceToken = "device_token"
            case environment, topic
            case createdAt = "created_at"
            case registeredAt = "registered_at"
            case lastPushAt = "last_push_at"
            case lastSyncedAt = "last_synced_at"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(service, forKey: .service)
            try container.encode(deviceToken, forKey: .deviceToken)
            try container.encode(environment, forKey: .environment)
            try container.encode(topic, forKey: .topic)
            try container.encode(createdAt, forKey: .createdAt)
            try container.encode(registeredAt, forKey: .registeredAt)
            try container.encode(lastPushAt, forKey: .lastPushAt)
            try container.encode(lastSyncedAt, forKey: .lastSyncedAt)
        }
    }

    struct DeviceListBody: ResponseEncodable {
        var devices: [DeviceBody]
    }

    struct RemovedBody: ResponseEncodable {
        var removed: Int
    }

    /// The path's APNs device token (`DeviceReference.isToken`).
    static func token(_ context: HeraldRequestContext) throws -> String {
        let token = try context.parameters.require("device_token")
        guard DeviceReference.isToken(token) else {
            throw APIError(
                .badRequest,
                code: "invalid_device_token",
                message: "A device token is hex with an even number of digits, 32 to 200 bytes decoded."
            )
        }
        return token.lowercased()
    }

    static func isTopic(_ topic: String) -> Bool {
        (1...255).contains(topic.utf8.count)
            && topic.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || ".-_".unicodeScalars.contains($0)) }
    }
}
