import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import MultipartKit

extension ConsoleRoutes {
    /// The credential upload: the API's fields, with the key or certificate as a file.
    struct CredentialForm: ConsoleForm {
        var csrf: String
        var name: String
        var type: String
        var environment: String
        var topic: String?
        var keyID: String?
        var teamID: String?
        var password: String?
        var file: Data?

        enum CodingKeys: String, CodingKey {
            case csrf, name, type, environment, topic, password, file
            case keyID = "key_id"
            case teamID = "team_id"
        }
    }

    /// An FCM credential: a name and the service account's key file.
    struct FCMCredentialForm: ConsoleForm {
        var csrf: String
        var name: String
        var file: Data?
    }

    /// A VAPID key to replace the server's: its PEM file.
    struct WebPushKeyForm: ConsoleForm {
        var csrf: String
        var file: Data?
    }

    static var failuresPageSize: Int { 50 }

    func registerPush(on console: RouterGroup<Context>) {
        console.get("push") { request, _ in
            let session = try await requireSession(request)
            return try await pushPage(request, session: session, problem: nil, status: .ok)
        }
        console.post("push/credentials") { request, context in
            let (form, session) = try await requireUpload(CredentialForm.self, request, context: context)
            guard let file = form.file, !file.isEmpty else {
                return try await pushPage(request, session: session, problem: "Choose the .p8 or .p12 file.", status: .unprocessableContent)
            }
            // The API's body: a .p8 key as its text, a .p12 as base64.
            var upload: [String: JSONValue] = ["type": .string(form.type), "environment": .string(form.environment)]
            for (field, value) in [("topic", form.topic), ("key_id", form.keyID), ("team_id", form.teamID), ("password", form.password)] {
                if let value, !value.isEmpty { upload[field] = .string(value) }
            }
            let bytes = Array(file)
            if form.type == "certificate" {
                upload["p12"] = .string(Data(bytes).base64EncodedString())
            } else {
                upload["key"] = .string(String(decoding: bytes, as: UTF8.self))
            }
            let answer = try await actions.putCredential(form.name, SendForm.json(.object(upload)))
            guard answer.succeeded else {
                return try await pushPage(request, session: session, problem: Self.apiMessage(answer), status: .unprocessableContent)
            }
            return Self.redirect("/console/push?notice=Credential+\(Self.pathComponent(form.name))+saved")
        }
        console.post("push/fcm-credentials") { request, context in
            let (form, session) = try await requireUpload(FCMCredentialForm.self, request, context: context)
            guard let file = form.file, !file.isEmpty else {
                return try await pushPage(
                    request,
                    session: session,
                    problem: "Choose the service account's key file (.json).",
                    status: .unprocessableContent
                )
            }
            let answer = try await actions.putFCMCredential(form.name, Array(file))
            guard answer.succeeded else {
                return try await pushPage(request, session: session, problem: Self.apiMessage(answer), status: .unprocessableContent)
            }
            return Self.redirect("/console/push?notice=FCM+credential+\(Self.pathComponent(form.name))+saved")
        }
        console.post("push/fcm-credentials/{name}/delete") { request, context in
            _ = try await requireForm(ButtonForm.self, request, context: context)
            let name = try context.parameters.require("name")
            let answer = try await actions.deleteFCMCredential(name)
            guard answer.succeeded else { throw ConsoleRefusal(.notFound, Self.apiMessage(answer)) }
            return Self.redirect("/console/push?notice=FCM+credential+\(Self.pathComponent(name))+deleted")
        }
        console.post("push/webpush-key") { request, context in
            let (form, session) = try await requireUpload(WebPushKeyForm.self, request, context: context)
            guard let file = form.file, !file.isEmpty else {
                return try await pushPage(request, session: session, problem: "Choose the VAPID key's PEM file.", status: .unprocessableContent)
            }
            let answer = try await actions.putWebPushKey(SendForm.json(.object(["private_key": .string(String(decoding: file, as: UTF8.self))])))
            guard answer.succeeded else {
                return try await pushPage(request, session: session, problem: Self.apiMessage(answer), status: .unprocessableContent)
            }
            return Self.redirect("/console/push?notice=VAPID+key+replaced")
        }
        console.post("push/credentials/{name}/delete") { request, context in
            _ = try await requireForm(ButtonForm.self, request, context: context)
            let name = try context.parameters.require("name")
            let answer = try await actions.deleteCredential(name)
            guard answer.succeeded else { throw ConsoleRefusal(.notFound, Self.apiMessage(answer)) }
            return Self.redirect("/console/push?notice=Credential+\(Self.pathComponent(name))+deleted")
        }
    }

    private func pushPage(
        _ request: Request,
        session: ConsoleSessionStore.Session,
        problem: String?,
        status: HTTPResponse.Status
    ) async throws
        -> Response
    {
        let before = request.uri.queryParameters["before"].flatMap { Int64($0) }
        let failures = try await push.failures(limit: Self.failuresPageSize, before: before)
        let credentials = try await overview.credentials()
        let fcmCredentials = try await overview.fcmCredentials()
        let webPushKey = try await actions.webPushKey()
        let publicKey =
            webPushKey.succeeded
            ? (try? JSONSerialization.jsonObject(with: Data(webPushKey.body)) as? [String: Any])?["public_key"] as? String : nil
        return page(
            "push",
            title: "Push",
            section: .push,
            session: session,
            status: status,
            values: [
                "credentials": credentials.map { credential -> [String: Any] in
                    [
                        "name": credential.name, "kind": credential.kind, "environment": credential.environment, "topic": credential.topic,
                        "expires": credential.certificateExpiresAt.map(Self.day) ?? "—",
                    ]
                },
                "noCredentials": credentials.isEmpty,
                "fcmCredentials": fcmCredentials.map { credential -> [String: Any] in
                    ["name": credential.name, "project": credential.projectID, "email": credential.clientEmail]
                },
                "noFCMCredentials": fcmCredentials.isEmpty,
                "webPushKey": publicKey ?? false,
                "webPushKeyProblem": publicKey == nil ? Self.apiMessage(webPushKey) : false,
                "failures": failures.map { failure -> [String: Any] in
                    [
                        "user": failure.userID ?? "(erased)", "service": failure.service.displayName,
                        "device": String(failure.deviceToken.prefix(12)) + "…",
                        "environment": failure.environment, "status": failure.status.map(String.init) ?? "—", "reason": failure.reason,
                        "attempts": failure.attempts, "removed": failure.tokenRemoved, "at": failure.failedAt.formatted(.iso8601),
                    ]
                },
                "noFailures": failures.isEmpty && before == nil,
                "next": failures.count == Self.failuresPageSize ? (failures.last?.id as Any? ?? false) : false,
                "problem": problem ?? false,
                "notice": Self.notice(request),
            ]
        )
    }
}
