import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// The user's iOS devices (`/v1/me/devices`), which silent refresh pushes go to.
struct DevicesController: Sendable {
    let devices: DeviceStore

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
        routes.add(.get, "/v1/me/devices", access: .user) { _, context in
            let user = try CollectionController.user(context)
            return DeviceListBody(devices: try await devices.list(userKey: user.key).map(DeviceBody.init))
        }
        routes.add(.delete, "/v1/me/devices/{device_token}", access: .user) { _, context in
            let user = try CollectionController.user(context)
            guard try await devices.unregister(userKey: user.key, token: try Self.token(context)) else {
                throw APIError(.notFound, code: "device_not_found", message: "This user has no device with this token.")
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

    struct DeviceBody: ResponseEncodable {
        var id: String
        var deviceToken: String
        var environment: String
        var topic: String
        var createdAt: String
        var registeredAt: String
        var lastPushAt: String?
        var lastSyncedAt: String?

        init(_ device: Device) {
            id = String(device.id)
            deviceToken = device.token
            environment = device.environment
            topic = device.topic
            createdAt = RFC3339.string(from: device.createdAt)
            registeredAt = RFC3339.string(from: device.registeredAt)
            lastPushAt = device.lastPushAt.map(RFC3339.string)
            lastSyncedAt = device.lastSyncedAt.map(RFC3339.string)
        }

        enum CodingKeys: String, CodingKey {
            case id
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
