import COpenSSL
import Foundation
import HeraldCrypto
import HeraldTesting
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2
import Testing

@testable import APNs

@Suite("APNs client", .timeLimit(.minutes(2)))
struct APNsClientTests {
    static let credentials = TestCredentials.shared
    static let token = String(repeating: "ab", count: 32)

    static func tokenServer(maxConcurrentStreams: Int = 100, now: @escaping @Sendable () -> Date = Date.init) async throws -> MockAPNsServer {
        let key = try P256Key(pem: credentials.signingKeyPEM)
        return try await MockAPNsServer.start(
            authentication: .token(publicKeyPEM: key.publicKeyPEM, keyID: credentials.keyID, teamID: credentials.teamID),
            maxConcurrentStreams: maxConcurrentStreams,
            now: now
        )
    }

    static func client(
        _ server: MockAPNsServer,
        cache: ProviderTokenCache? = nil,
        timeout: Duration = .seconds(10),
        connections: Int = 2
    ) throws -> APNsClient {
        let cache =
            try cache ?? ProviderTokenCache(key: P256Key(pem: credentials.signingKeyPEM), keyID: credentials.keyID, teamID: credentials.teamID)
        return try APNsClient(
            configuration: .init(
                baseURL: server.baseURL,
                additionalTrustRootFiles: [server.trustRootFile],
                timeout: timeout,
                connections: connections
            ),
            authentication: .token(cache)
        )
    }

    static func push(_ token: String = token, payload: String = #"{"aps":{"content-available":1}}"#) -> APNsPush {
        APNsPush(
            deviceToken: token,
            topic: "com.example.herald",
            pushType: "background",
            priority: 5,
            expiration: 1_900_000_000,
            collapseID: "user-1",
            payload: Array(payload.utf8)
        )
    }

    @Test func aSilentPushCarriesExactlyTheAPNsHeadersAndASignedToken() async throws {
        let server = try await Self.tokenServer()
        let client = try Self.client(server)
        let result = await client.send(Self.push())
        await client.shutdown()
        await server.shutdown()
        #expect(result == APNsResult(outcome: .delivered, status: 200, reason: nil))
        let request = try #require(server.requests.first)
        #expect(request.method == "POST")
        #expect(request.path == "/3/device/\(Self.token)")
        #expect(request.headers["apns-push-type"] == "background")
        #expect(request.headers["apns-priority"] == "5")
        #expect(request.headers["apns-topic"] == "com.example.herald")
        #expect(request.headers["apns-expiration"] == "1900000000")
        #expect(request.headers["apns-collapse-id"] == "user-1")
        #expect(request.headers["authorization"]?.hasPrefix("bearer ey") == true)
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"aps":{"content-available":1}}"#)
    }

    @Test func oneProviderTokenServesAThousandPushesAndANewOneComesAfterTheRefreshInterval() async throws {
        let clock = NIOLockedValueBox(Date())
        let now: @Sendable () -> Date = { clock.withLockedValue { $0 } }
        // The mock allows 10 streams at once; the client would open 1,000: it must keep to the
        // server's SETTINGS (NIOHTTP2 on the mock refuses streams beyond them).
        let server = try await Self.tokenServer(maxConcurrentStreams: 10, now: now)
        let cache = try ProviderTokenCache(
            key: P256Key(pem: Self.credentials.signingKeyPEM),
            keyID: Self.credentials.keyID,
            teamID: Self.credentials.teamID,
            refreshAfter: .seconds(40 * 60),
            now: now
        )
        // Debug builds of the HTTP/2 stack answer a few hundred requests a second: the deadline allows for it.
        let client = try Self.client(server, cache: cache, timeout: .seconds(60))
        // 1,000 pushes in one batch, as the dispatcher sends them.
        let results = await client.send((0..<1000).map { Self.push(String(format: "%064x", $0)) }).map(\.result)
        #expect(server.requests.count == 1000)
        #expect(results.allSatisfy { $0.outcome == .delivered }, "\(Dictionary(grouping: results, by: { $0.reason ?? "ok" }).mapValues(\.count))")
        #expect(Set(server.requests.map { $0.headers["authorization"] }).count == 1)
        clock.withLockedValue { $0 += 39 * 60 }
        _ = await client.send(Self.push())
        #expect(Set(server.requests.map { $0.headers["authorization"] }).count == 1)
        clock.withLockedValue { $0 += 2 * 60 }
        let afterRefresh = await client.send(Self.push())
        await client.shutdown()
        await server.shutdown()
        #expect(afterRefresh.outcome == .delivered)
        #expect(Set(server.requests.map { $0.headers["authorization"] }).count == 2)
    }

    /// However late the caller resumes after connecting (a loaded machine descheduled it between the
    /// connect and its next step), the server's first SETTINGS are not lost. The HTTP/2 handler used to
    /// be added after `connect` returned: SETTINGS read meanwhile fell off the end of the pipeline, and
    /// the server's acknowledgement of the client's own SETTINGS then failed every push waiting on the
    /// connection (`ReceivedBadSettings`: half of a batch of 1,000 on a fresh clone's run). The hook
    /// stands for the late caller: while the connection has no HTTP/2 handler yet it waits until the
    /// server's first frames have been read.
    @Test func pushesSurviveACallerThatResumesLateAfterConnecting() async throws {
        let server = try await Self.tokenServer(maxConcurrentStreams: 10)
        let cache = try ProviderTokenCache(
            key: P256Key(pem: Self.credentials.signingKeyPEM),
            keyID: Self.credentials.keyID,
            teamID: Self.credentials.teamID
        )
        var configuration = APNsClient.Configuration(
            baseURL: server.baseURL,
            additionalTrustRootFiles: [server.trustRootFile],
            timeout: .seconds(30),
            connections: 1
        )
        configuration.connected = { channel in
            try await channel.eventLoop.flatSubmit {
                let read = channel.eventLoop.makePromise(of: Void.self)
                let pipeline = channel.pipeline.syncOperations
                if (try? pipeline.handler(type: NIOHTTP2Handler.self)) == nil {
                    do { try pipeline.addHandler(FirstRead(read)) } catch { read.fail(error) }
                } else {
                    read.succeed()
                }
                return read.futureResult
            }.get()
        }
        let client = try APNsClient(configuration: configuration, authentication: .token(cache))
        let results = await client.send((0..<20).map { Self.push(String(format: "%064x", $0)) }).map(\.result)
        await client.shutdown()
        await server.shutdown()
        #expect(results.allSatisfy { $0.outcome == .delivered }, "\(results.map { $0.reason ?? "ok" })")
        #expect(server.requests.count == 20)
    }

    /// A server may reset a stream after answering it (nginx resets every stream whose body it did
    /// not read): such resets, far more than NIOHTTP2's flood guard allows by default (200 in 30 s),
    /// neither fail the answered pushes nor close the connection.
    @Test func streamsResetAfterTheirAnswerAreNotAFlood() async throws {
        let server = try await Self.tokenServer()
        let tokens = (0..<600).map { String(format: "%064x", $0) }
        for token in tokens { server.script(token, [.answeredThenReset]) }
        let client = try Self.client(server, timeout: .seconds(60), connections: 1)
        let first = await client.send(tokens.prefix(300).map { Self.push($0) }).map(\.result)
        let second = await client.send(tokens.suffix(300).map { Self.push($0) }).map(\.result)
        await client.shutdown()
        await server.shutdown()
        let results = first + second
        #expect(results.allSatisfy { $0.outcome == .delivered }, "\(Dictionary(grouping: results, by: { $0.reason ?? "ok" }).mapValues(\.count))")
        #expect(server.requests.count == 600)
        #expect(Set(server.requests.map(\.connection)).count == 1, "the connection was closed and opened again")
    }

    @Test func everyKindOfAnswerIsClassified() async throws {
        let server = try await Self.tokenServer()
        let client = try Self.client(server)
        let cases: [(MockAPNsServer.Answer, APNsResult.Outcome)] = [
            (.status(400, reason: "BadDeviceToken"), .invalidToken),
            (.status(400, reason: "DeviceTokenNotForTopic"), .invalidToken),
            (.status(410, reason: "Unregistered", timestamp: 1_700_000_000_000), .invalidToken),
            (.status(410, reason: "ExpiredToken"), .invalidToken),
            (.status(403, reason: "ExpiredProviderToken"), .providerTokenRejected),
            (.status(429, reason: "TooManyRequests"), .throttled),
            (.status(500, reason: "InternalServerError"), .transient),
            (.status(503, reason: "ServiceUnavailable"), .transient),
            (.status(400, reason: "BadTopic"), .permanent),
            (.status(403, reason: "Forbidden"), .permanent),
        ]
        for (index, (answer, expected)) in cases.enumerated() {
            let token = String(format: "%064x", index + 1)
            server.script(token, [answer])
            let result = await client.send(Self.push(token))
            #expect(result.outcome == expected, "\(answer)")
            if case .status(let status, let reason, let timestamp) = answer {
                #expect(result.status == status)
                #expect(result.reason == reason)
                #expect(result.timestamp == timestamp)
            }
        }
        let oversized = await client.send(Self.push(payload: "{\"a\":\"" + String(repeating: "x", count: 4100) + "\"}"))
        #expect(oversized.outcome == .permanent)
        #expect(server.requests.count == cases.count)  // the oversized one never left
        await client.shutdown()
        await server.shutdown()
    }

    @Test func bodiesBeyondTheConnectionWindowFlowBothWays() async throws {
        // One connection; ~120 KB of request bodies up and ~90 KB of error bodies down: both ends read
        // frames directly and must give the connection's 64 KiB flow-control window back, or the
        // pushes past it would stall until their deadline.
        let server = try await Self.tokenServer()
        let client = try APNsClient(
            configuration: .init(baseURL: server.baseURL, additionalTrustRootFiles: [server.trustRootFile], timeout: .seconds(60), connections: 1),
            authentication: .token(
                ProviderTokenCache(key: P256Key(pem: Self.credentials.signingKeyPEM), keyID: Self.credentials.keyID, teamID: Self.credentials.teamID)
            )
        )
        let tokens = (0..<400).map { String(format: "%064x", $0 + 1) }
        let reason = "Refused" + String(repeating: "-", count: 200)
        for token in tokens { server.script(token, [.status(400, reason: reason)]) }
        let payload = #"{"aps":{"content-available":1},"pad":""# + String(repeating: "x", count: 250) + #""}"#
        let results = await client.send(tokens.map { Self.push($0, payload: payload) }).map(\.result)
        await client.shutdown()
        await server.shutdown()
        #expect(
            results.allSatisfy { $0.outcome == .permanent && $0.reason == reason },
            "\(Dictionary(grouping: results, by: { $0.reason?.prefix(20) ?? "ok" }).mapValues(\.count))"
        )
        #expect(Set(server.requests.map(\.connection)).count == 1)
    }

    @Test func aRefusedProviderTokenIsReplacedOnce() async throws {
        let server = try await Self.tokenServer()
        let client = try Self.client(server)
        server.script(Self.token, [.status(403, reason: "ExpiredProviderToken")])
        #expect(await client.send(Self.push()).outcome == .providerTokenRejected)
        #expect(await client.send(Self.push()).outcome == .delivered)
        await client.shutdown()
        await server.shutdown()
        let tokens = server.requests.map { $0.headers["authorization"] }
        #expect(tokens.count == 2 && tokens[0] != tokens[1])
    }

    @Test func goAwayAndAHungStreamEndAsRetryableFailures() async throws {
        let server = try await Self.tokenServer()
        let client = try Self.client(server, timeout: .seconds(2))
        server.script(Self.token, [.goAway])
        let goAway = await client.send(Self.push())
        #expect(goAway.outcome == .transient, "\(goAway)")
        // A retry goes out on a new connection. One sent while the old connection is still closing may
        // fail too, as the dispatcher's retries (with backoff) allow for; a few attempts must succeed.
        var retried = await client.send(Self.push())
        for _ in 0..<5 where retried.outcome != .delivered { retried = await client.send(Self.push()) }
        #expect(retried.outcome == .delivered, "\(retried)")
        // A token of its own for the hang: a failed attempt above may still reach the server late
        // (its connection was closing) and would take a script meant for this one.
        let hangs = String(repeating: "cd", count: 32)
        server.script(hangs, [.hang])
        let hung = await client.send(Self.push(hangs))
        #expect(hung.outcome == .transient, "\(hung)")
        // A timeout: of the stream, or — on a machine busy enough that a new connection's handshake
        // ran out of time first — of that handshake, which the refusal while the slot waits names.
        #expect(hung.reason?.contains("timeout") == true, "\(hung)")
        var after = await client.send(Self.push())
        for _ in 0..<5 where after.outcome != .delivered { after = await client.send(Self.push()) }
        #expect(after.outcome == .delivered, "\(after)")
        await client.shutdown()
        await server.shutdown()
        #expect(Set(server.requests.map(\.connection)).count >= 2)
    }

    @Test func aP12ClientCertificateAuthenticates() async throws {
        let credentials = Self.credentials
        let bundle = try PKCS12Bundle(bytes: credentials.p12, password: credentials.certificatePassword)
        #expect(bundle.topic == credentials.certificateTopic)
        #expect(throws: APNsCredentialError.self) { try PKCS12Bundle(bytes: credentials.p12, password: "wrong") }
        let server = try await MockAPNsServer.start(authentication: .certificate(trustedClientCertificateFile: credentials.clientCertificateFile))
        let client = try APNsClient(
            configuration: .init(baseURL: server.baseURL, additionalTrustRootFiles: [server.trustRootFile]),
            authentication: .certificate(bundle)
        )
        let result = await client.send(Self.push())
        await client.shutdown()
        #expect(result.outcome == .delivered)
        #expect(server.requests.first?.headers["authorization"] == nil)
        // Without the certificate the handshake fails: nothing is accepted.
        let anonymous = try Self.client(server, timeout: .seconds(2))
        let refused = await anonymous.send(Self.push())
        await anonymous.shutdown()
        await server.shutdown()
        #expect(refused.outcome == .transient)
        #expect(server.requests.count == 1)
    }

    /// The client sends nothing to a server it cannot trust: a certificate from no trusted root, one
    /// for another host name, or a handshake below TLS 1.2.
    @Test(arguments: ["untrusted", "wrong host", "TLS 1.1"])
    func theClientRefusesAServerItCannotTrust(_ case: String) async throws {
        let key = try P256Key(pem: Self.credentials.signingKeyPEM)
        let server = try await MockAPNsServer.start(
            authentication: .token(publicKeyPEM: key.publicKeyPEM, keyID: Self.credentials.keyID, teamID: Self.credentials.teamID),
            presentation: `case` == "wrong host" ? .wrongHost : `case` == "TLS 1.1" ? .oldTLS : .standard
        )
        let client = try APNsClient(
            configuration: .init(
                baseURL: server.baseURL,
                additionalTrustRootFiles: `case` == "untrusted" ? [] : [server.trustRootFile],
                timeout: .seconds(10)
            ),
            authentication: .token(ProviderTokenCache(key: key, keyID: Self.credentials.keyID, teamID: Self.credentials.teamID))
        )
        let result = await client.send(Self.push())
        await client.shutdown()
        await server.shutdown()
        #expect(result.outcome == .transient)
        #expect(result.status == nil)
        #expect(server.requests.isEmpty)
    }

    /// The same server, trusted and as it should be, is accepted (the cases above fail for their reason).
    @Test func theClientAcceptsTheServerWhenItIsTrusted() async throws {
        let server = try await Self.tokenServer()
        let client = try Self.client(server)
        let result = await client.send(Self.push())
        await client.shutdown()
        await server.shutdown()
        #expect(result.outcome == .delivered)
    }

    @Test func anEncryptedKeyIsRefusedWithoutAskingForItsPassword() {
        // libssl's default would prompt on the terminal and block; the refusal comes back at once.
        #expect(throws: CryptoKeyError("the key is encrypted: supply it unencrypted")) {
            try P256Key(pem: Self.credentials.encryptedSigningKeyPEM)
        }
        #expect(Self.credentials.encryptedSigningKeyPEM.contains("ENCRYPTED PRIVATE KEY"))
        // Nothing is left in the thread's libssl error queue for the next caller to misread.
        #expect(ERR_peek_error() == 0)
    }

    @Test func aWrongPasswordAndALegacyP12AreToldApart() throws {
        let credentials = Self.credentials
        #expect(throws: APNsCredentialError.invalidCertificate("the .p12 does not open with this password")) {
            try PKCS12Bundle(bytes: credentials.legacyP12, password: "wrong")
        }
        do {
            _ = try PKCS12Bundle(bytes: credentials.legacyP12, password: credentials.certificatePassword)
            Issue.record("a legacy .p12 opened; OpenSSL's legacy provider is loaded in this process?")
        } catch {
            #expect(error.description.contains("legacy algorithm"))
            #expect(error.description.contains("openssl pkcs12 -legacy -in old.p12"))
        }
        #expect(throws: APNsCredentialError.invalidCertificate("the data is not a PKCS#12 (.p12) file")) {
            try PKCS12Bundle(bytes: Array("not a p12".utf8), password: "")
        }
        #expect(ERR_peek_error() == 0)
        // The current export of the same certificate opens.
        #expect(try PKCS12Bundle(bytes: credentials.p12, password: credentials.certificatePassword).topic == credentials.certificateTopic)
    }

    @Test func keysAreCheckedWhenLoaded() throws {
        #expect(throws: CryptoKeyError.self) { try P256Key(pem: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n") }
        let key = try P256Key(pem: Self.credentials.signingKeyPEM)
        let message = Array("header.claims".utf8)
        let signature = key.sign(message)
        #expect(signature.count == 64)
        let verifier = try P256PublicKey(pem: key.publicKeyPEM)
        #expect(verifier.isValidSignature(signature, for: message))
        #expect(!verifier.isValidSignature(signature, for: Array("header.claimz".utf8)))
    }
}

/// Completes `promise` when the first bytes reach the end of the pipeline.
private final class FirstRead: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let promise: EventLoopPromise<Void>

    init(_ promise: EventLoopPromise<Void>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        promise.succeed()
    }
}
