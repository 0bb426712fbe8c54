import AsyncHTTPClient
import FCM
import Foundation
import HeraldCrypto
import HeraldTesting
import Logging
import NIOSSL
import Testing

@Suite("FCM client")
struct FCMClientTests {
    /// One service-account key for the suite: generating RSA keys is slow.
    static let key = RS256Key()
    static let projectID = "herald-test"

    static let clientEmail = "herald@\(projectID).iam.gserviceaccount.com"

    static func keyFile(tokenURI: String, key: RS256Key = key, projectID: String = projectID, email: String = clientEmail) -> [UInt8] {
        MockFCMServer.keyFile(tokenURI: tokenURI, key: key, projectID: projectID, email: email)
    }

    /// A client of `mock` for a service account with `key`, and the HTTP client to shut down.
    static func withClient(
        _ mock: MockFCMServer,
        key: RS256Key = key,
        projectID: String = projectID,
        email: String = clientEmail,
        _ body: (FCMClient) async throws -> Void
    ) async throws {
        var configuration = HTTPClient.Configuration()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(mock.trustRootFile)]
        configuration.tlsConfiguration = tls
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let account = try FCMServiceAccount(json: keyFile(tokenURI: mock.tokenURI, key: key, projectID: projectID, email: email))
        let client = try FCMClient(
            account: account,
            // A deadline for a machine busy with the whole suite.
            configuration: .init(baseURL: URL(string: mock.baseURL)!, timeout: .seconds(60), additionalTrustRootFiles: [mock.trustRootFile]),
            http: http,
            logger: Logger(label: "test.fcm")
        )
        do {
            try await body(client)
        } catch {
            await client.shutdown()
            try? await http.shutdown()
            throw error
        }
        await client.shutdown()
        try await http.shutdown()
    }

    /// A mock FCM for the suite's service account, shut down after `body`.
    static func withMock(_ body: (MockFCMServer) async throws -> Void) async throws {
        let mock = try await MockFCMServer.start(
            publicKeyPEM: key.publicKeyPEM,
            clientEmail: clientEmail,
            keyID: "key-1",
            projectID: projectID
        )
        do {
            try await body(mock)
        } catch {
            await mock.shutdown()
            throw error
        }
        await mock.shutdown()
    }

    static func refresh(_ token: String) -> FCMMessage {
        FCMMessage(
            token: token,
            data: [("herald", #"{"type":"refresh","badge":3}"#)],
            priority: .normal,
            collapseKey: "herald-refresh",
            timeToLive: 86_400
        )
    }

    @Test func messagesGoOutWithOneAccessTokenInTheShapeFCMTakes() async throws {
        try await Self.withMock { mock in
            try await Self.withClient(mock) { client in
                #expect(await client.send(Self.refresh("device-a")) == .delivered)
                let alert = FCMMessage(
                    token: "device-b",
                    data: [("herald", #"{"type":"alert"}"#)],
                    notification: .init(title: "Anna", body: "Lunch? \"now\"", sound: "default"),
                    priority: .high
                )
                #expect(await client.send(alert) == .delivered)
            }
            #expect(mock.tokenRequests == 1, "the access token is kept between messages")
            let (refresh, alert) = (mock.messages[0].object, mock.messages[1].object)
            #expect((refresh["data"] as? [String: String])?["herald"] == #"{"type":"refresh","badge":3}"#)
            #expect(refresh["notification"] == nil)
            let android = try #require(refresh["android"] as? [String: Any])
            #expect(android["priority"] as? String == "NORMAL" && android["collapse_key"] as? String == "herald-refresh")
            #expect(android["ttl"] as? String == "86400s")
            #expect((alert["notification"] as? [String: String]) == ["title": "Anna", "body": "Lunch? \"now\""])
            #expect((alert["android"] as? [String: Any])?["priority"] as? String == "HIGH")
            #expect(((alert["android"] as? [String: Any])?["notification"] as? [String: String])?["sound"] == "default")
        }
    }

    @Test func aRefusedAccessTokenIsRenewedOnceAndTheMessageSentAgain() async throws {
        try await Self.withMock { mock in
            try await Self.withClient(mock) { client in
                #expect(await client.send(Self.refresh("device-a")) == .delivered)
                mock.revokeAccessTokens()
                #expect(await client.send(Self.refresh("device-a")) == .delivered)
            }
            #expect(mock.tokenRequests == 2)
            #expect(mock.messages.count == 2, "the refused request was not recorded as a message")
        }
    }

    /// A batch goes over the connections at once; when the token is refused mid-life, the refused
    /// messages of the batch go again with one new token, and each answer stays with its message.
    @Test func aBatchIsAnsweredInOrderAndItsRefusedMessagesSentAgainWithOneNewToken() async throws {
        try await Self.withMock { mock in
            mock.script("device-7", [.error(status: 404, code: "UNREGISTERED")])
            try await Self.withClient(mock) { client in
                #expect(await client.send(Self.refresh("device-0")) == .delivered)
                mock.revokeAccessTokens()
                let sent = await client.send((0..<50).map { Self.refresh("device-\($0)") })
                #expect(sent.count == 50)
                for (index, result) in sent.enumerated() {
                    #expect(result.outcome == (index == 7 ? .unregistered(reason: "UNREGISTERED") : .delivered), "message \(index)")
                    #expect(result.elapsed > .zero)
                }
            }
            #expect(mock.tokenRequests == 2)
            #expect(Set(mock.messages.dropFirst().map(\.token)) == Set((0..<50).map { "device-\($0)" }))
        }
    }

    /// Only the messages FCM refused go again with a new token; the others keep their answers, and
    /// one refused twice is the credential's failure.
    @Test func onlyTheRefusedMessagesOfABatchGoAgain() async throws {
        try await Self.withMock { mock in
            mock.script("device-3", [.error(status: 401, code: "UNAUTHENTICATED"), .error(status: 401, code: "UNAUTHENTICATED")])
            mock.script("device-5", [.error(status: 401, code: "UNAUTHENTICATED")])
            try await Self.withClient(mock) { client in
                let sent = await client.send((0..<8).map { Self.refresh("device-\($0)") })
                #expect(sent.map(\.outcome) == (0..<8).map { $0 == 3 ? .credentialRejected(reason: "UNAUTHENTICATED") : .delivered })
            }
            #expect(mock.tokenRequests == 2)
            // Eight first, then the two refused ones again.
            #expect(mock.messages.count == 10)
            #expect(Set(mock.messages.suffix(2).map(\.token)) == ["device-3", "device-5"])
        }
    }

    @Test func answersAreSortedByWhatTheyMeanForTheDevice() async throws {
        try await Self.withMock { mock in
            mock.script(
                "device-a",
                [
                    .error(status: 404, code: "UNREGISTERED"), .invalidToken, .error(status: 429, code: "QUOTA_EXCEEDED", retryAfter: 7),
                    .error(status: 503, code: "UNAVAILABLE"), .error(status: 403, code: "SENDER_ID_MISMATCH"),
                    .error(status: 400, code: "INVALID_ARGUMENT"),
                ]
            )
            try await Self.withClient(mock) { client in
                var outcomes: [FCMOutcome] = []
                for _ in 0..<7 { outcomes.append(await client.send(Self.refresh("device-a"))) }
                #expect(
                    outcomes == [
                        .unregistered(reason: "UNREGISTERED"), .unregistered(reason: "INVALID_ARGUMENT (message.token)"),
                        .retry(reason: "QUOTA_EXCEEDED", retryAfter: .seconds(7)), .retry(reason: "UNAVAILABLE", retryAfter: nil),
                        .credentialRejected(reason: "SENDER_ID_MISMATCH"), .rejected(reason: "INVALID_ARGUMENT"), .delivered,
                    ]
                )
            }
        }
    }

    @Test func anotherProjectOrKeyIsTheCredentialsFailure() async throws {
        try await Self.withMock { mock in
            // Signed by a key the token endpoint does not know.
            try await Self.withClient(mock, key: RS256Key()) { client in
                guard case .credentialRejected(let reason) = await client.send(Self.refresh("device-a")) else {
                    Issue.record("a foreign key's assertion was accepted")
                    return
                }
                #expect(reason.contains("Invalid JWT Signature"))
                // A refused account does not ask the token endpoint again at every send.
                #expect(await client.send(Self.refresh("device-a")) == .credentialRejected(reason: reason))
            }
            #expect(mock.refusedAssertions == 1 && mock.messages.isEmpty)
            // The right key, another account's name.
            try await Self.withClient(mock, email: "someone@else.iam.gserviceaccount.com") { client in
                guard case .credentialRejected = await client.send(Self.refresh("device-a")) else {
                    Issue.record("an assertion naming another account was accepted")
                    return
                }
            }
            #expect(mock.refusedAssertions == 2)
            try await Self.withClient(mock, projectID: "another-project") { client in
                #expect(await client.send(Self.refresh("device-a")) == .credentialRejected(reason: "SENDER_ID_MISMATCH"))
            }
        }
    }

    @Test func keyFilesAreCheckedFieldByField() throws {
        func problem(_ change: (inout [String: Any]) -> Void) -> String? {
            var object =
                try! JSONSerialization.jsonObject(with: Data(Self.keyFile(tokenURI: "https://oauth2.googleapis.com/token"))) as! [String: Any]
            change(&object)
            do {
                _ = try FCMServiceAccount(json: Array(try! JSONSerialization.data(withJSONObject: object)))
                return nil
            } catch {
                return error.field
            }
        }
        #expect(problem { _ in } == nil)
        #expect(problem { $0["type"] = "authorized_user" } == "type")
        #expect(problem { $0["project_id"] = "My Project" } == "project_id")
        #expect(problem { $0["client_email"] = nil } == "client_email")
        #expect(problem { $0["token_uri"] = "http://oauth2.googleapis.com/token" } == "token_uri")
        #expect(problem { $0["private_key"] = "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n" } == "private_key")
        #expect(problem { $0["private_key"] = P256Key().pem } == "private_key")
        #expect(throws: FCMServiceAccount.Problem.self) { try FCMServiceAccount(json: Array("[1]".utf8)) }
    }
}
