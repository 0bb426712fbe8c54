import FCM
import Foundation
import HeraldCrypto
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// A real HTTP/2 + TLS server that behaves like FCM's HTTP v1 API and Google's OAuth token endpoint,
/// for tests.
///
/// The token endpoint (`POST /token`) checks the assertion as Google does — RS256 under the service
/// account's public key, its issuer, audience, scope and life — and issues access tokens;
/// `POST /v1/projects/<id>/messages:send` checks the bearer token (issued here, not revoked, for
/// the project), and the message's shape (one registration token, data values strings, a known
/// Android priority). Answers can be scripted per registration token with FCM's documented error
/// bodies. Every request is recorded.
public final class MockFCMServer: Sendable {
    /// What the mock answers a valid message with.
    public enum Answer: Sendable, Equatable {
        case delivered
        /// An FCM error: HTTP status, the `FcmError` code (`UNREGISTERED`, `QUOTA_EXCEEDED`, …), and a
        /// `Retry-After` in seconds.
        case error(status: Int, code: String, retryAfter: Int? = nil)
        /// `INVALID_ARGUMENT` with a field violation on `message.token`, as FCM answers a malformed token.
        case invalidToken
    }

    /// A message as the mock received it.
    public struct Message: Sendable {
        public var token: String
        /// The `message` object as JSON.
        public var json: [UInt8]
        public var answer: Answer?
        public var receivedAt: Date

        /// The `message` object.
        public var object: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any]) ?? [:] }
    }

    private struct State {
        var issued: [String: Date] = [:]
        var tokenRequests = 0
        var refusedAssertions = 0
        var messages: [Message] = []
        var scripts: [String: [Answer]] = [:]
    }

    public let projectID: String
    /// Close it to stall the messages endpoint (the token endpoint keeps answering).
    public let gate: MockGate
    private let state: NIOLockedValueBox<State>
    private let service: MockHTTPSService

    public var port: Int { service.port }
    /// The certificate clients must trust (the server's self-signed one).
    public var trustRootFile: String { service.trustRootFile }

    public var baseURL: String { "https://127.0.0.1:\(port)" }
    public var tokenURI: String { baseURL + "/token" }

    private init(projectID: String, gate: MockGate, state: NIOLockedValueBox<State>, service: MockHTTPSService) {
        self.projectID = projectID
        self.gate = gate
        self.state = state
        self.service = service
    }

    /// Starts the mock for the service account `clientEmail` whose key `keyID` has the public half
    /// `publicKeyPEM`, in `projectID`. Access tokens live `accessTokenLifetime` seconds.
    public static func start(
        publicKeyPEM: String,
        clientEmail: String,
        keyID: String,
        projectID: String,
        accessTokenLifetime: Int = 3600,
        credentials: TestCredentials = .shared,
        now: @escaping @Sendable () -> Date = Date.init
    ) async throws -> MockFCMServer {
        let verifier = try RS256PublicKey(pem: publicKeyPEM)
        let state = NIOLockedValueBox(State())
        let gate = MockGate()
        let router = Router()
        let port = NIOLockedValueBox(0)
        router.post("token") { request, _ -> Response in
            let form = String(buffer: try await request.body.collect(upTo: 64 * 1024))
            let fields = Dictionary(
                form.split(separator: "&").map { pair -> (String, String) in
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    return (String(parts[0]), parts.count > 1 ? String(parts[1]).removingPercentEncoding ?? "" : "")
                }
            ) { $1 }
            let audience = "https://127.0.0.1:\(port.withLockedValue { $0 })/token"
            guard fields["grant_type"] == FCMAssertion.grantType, let assertion = fields["assertion"],
                let verified = FCMAssertion.verify(assertion, publicKey: verifier, audience: audience, now: now()),
                verified.issuer == clientEmail, verified.keyID == keyID
            else {
                state.withLockedValue { $0.refusedAssertions += 1 }
                return json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
            }
            let token = "mock-access-" + SecureRandom.hexToken(byteCount: 8)
            state.withLockedValue {
                $0.tokenRequests += 1
                $0.issued[token] = now() + TimeInterval(accessTokenLifetime)
            }
            return json(200, #"{"access_token":"\#(token)","expires_in":\#(accessTokenLifetime),"token_type":"Bearer"}"#)
        }
        router.post("v1/projects/:project/messages:send") { request, context -> Response in
            await gate.pass()
            let body = Array(buffer: try await request.body.collect(upTo: 64 * 1024))
            let authorization = request.headers[.authorization] ?? ""
            let bearer = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst("Bearer ".count)) : ""
            let live = state.withLockedValue { state in state.issued[bearer].map { $0 > now() } ?? false }
            guard live else {
                return fcmError(401, status: "UNAUTHENTICATED", code: nil, message: "Request had invalid authentication credentials.")
            }
            guard context.parameters.get("project") == projectID else {
                return fcmError(403, status: "PERMISSION_DENIED", code: "SENDER_ID_MISMATCH", message: "SenderId mismatch")
            }
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any], object.keys.sorted() == ["message"],
                let message = object["message"] as? [String: Any], Set(message.keys).isSubset(of: messageFields),
                let token = message["token"] as? String, !token.isEmpty,
                message["data"].map({ ($0 as? [String: Any])?.values.allSatisfy { $0 is String } == true }) ?? true,
                message["android"].map({ isAndroidConfig($0) }) ?? true,
                message["notification"].map({
                    ($0 as? [String: Any]).map { $0["body"] is String && Set($0.keys).isSubset(of: ["title", "body", "image"]) } == true
                }) ?? true,
                let encoded = try? JSONSerialization.data(withJSONObject: message)
            else {
                return fcmError(400, status: "INVALID_ARGUMENT", code: "INVALID_ARGUMENT", message: "Invalid JSON payload received.")
            }
            let answer = state.withLockedValue { state -> Answer in
                let answer = state.scripts[token]?.isEmpty == false ? state.scripts[token]!.removeFirst() : .delivered
                state.messages.append(Message(token: token, json: Array(encoded), answer: answer, receivedAt: Date()))
                return answer
            }
            switch answer {
            case .delivered:
                return json(200, #"{"name":"projects/\#(projectID)/messages/\#(SecureRandom.hexToken(byteCount: 6))"}"#)
            case .error(let status, let code, let retryAfter):
                var response = fcmError(status, status: statusName(status), code: code, message: code)
                if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
                return response
            case .invalidToken:
                let body =
                    #"{"error":{"code":400,"message":"The registration token is not a valid FCM registration token","status":"INVALID_ARGUMENT","#
                    + #""details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","#
                    + #""description":"Invalid registration token"}]},{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","#
                    + #""errorCode":"INVALID_ARGUMENT"}]}}"#
                return json(400, body)
            }
        }
        let service = try await MockHTTPSService.start(router, label: "mock.fcm", credentials: credentials)
        port.withLockedValue { $0 = service.port }
        return MockFCMServer(projectID: projectID, gate: gate, state: state, service: service)
    }

    /// The answers to give the next messages to `token`, in order; then `.delivered`.
    public func script(_ token: String, _ answers: [Answer]) {
        state.withLockedValue { $0.scripts[token] = answers }
    }

    /// Every access token issued so far stops working (as a revoked key's tokens do).
    public func revokeAccessTokens() {
        state.withLockedValue { $0.issued = [:] }
    }

    public var messages: [Message] { state.withLockedValue { $0.messages } }
    /// Access tokens issued.
    public var tokenRequests: Int { state.withLockedValue { $0.tokenRequests } }
    /// Assertions refused.
    public var refusedAssertions: Int { state.withLockedValue { $0.refusedAssertions } }

    /// A service account's key file as the Firebase console downloads it, for `key`, naming
    /// `tokenURI` as its token endpoint.
    public static func keyFile(tokenURI: String, key: RS256Key, projectID: String, email: String, keyID: String = "key-1") -> [UInt8] {
        let object: [String: Any] = [
            "type": "service_account", "project_id": projectID, "private_key_id": keyID, "private_key": key.pem,
            "client_email": email, "token_uri": tokenURI,
        ]
        return Array(try! JSONSerialization.data(withJSONObject: object))
    }

    /// Stops accepting, and returns once the connections open now have closed.
    public func shutdown() async {
        gate.open()
        await service.shutdown()
    }

    /// The fields of a v1 `Message` (FCM refuses others as "Unknown name").
    private static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition",
    ]

    /// An `AndroidConfig`: known fields only, a known priority, a TTL in seconds (`"86400s"`).
    private static func isAndroidConfig(_ value: Any) -> Bool {
        guard let android = value as? [String: Any],
            Set(android.keys).isSubset(of: [
                "collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification", "fcm_options", "direct_boot_ok",
            ]),
            ["NORMAL", "HIGH"].contains(android["priority"] as? String ?? "NORMAL")
        else { return false }
        if let ttl = android["ttl"] {
            guard let text = ttl as? String, text.hasSuffix("s"), Double(text.dropLast()) != nil else { return false }
        }
        return true
    }

    private static func json(_ status: Int, _ text: String) -> Response {
        Response(
            status: .init(code: status),
            headers: [.contentType: "application/json; charset=UTF-8"],
            body: .init(byteBuffer: ByteBuffer(string: text))
        )
    }

    private static func fcmError(_ status: Int, status name: String, code: String?, message: String) -> Response {
        let details = code.map { #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"# } ?? ""
        return json(status, #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(name)"\#(details)}}"#)
    }

    private static func statusName(_ status: Int) -> String {
        switch status {
        case 400: return "INVALID_ARGUMENT"
        case 403: return "PERMISSION_DENIED"
        case 404: return "NOT_FOUND"
        case 429: return "RESOURCE_EXHAUSTED"
        case 503: return "UNAVAILABLE"
        default: return "INTERNAL"
        }
    }
}
