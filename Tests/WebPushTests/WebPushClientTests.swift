import AsyncHTTPClient
import Foundation
import HeraldCrypto
import HeraldTesting
import Logging
import NIOSSL
import Testing
import WebPush

@Suite("Web Push client")
struct WebPushClientTests {
    /// A client with a fresh VAPID key for a fresh mock push service, both shut down after `body`.
    static func withService(_ body: (MockWebPushService, WebPushClient) async throws -> Void) async throws {
        let service = try await MockWebPushService.start()
        var configuration = HTTPClient.Configuration()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(service.trustRootFile)]
        configuration.tlsConfiguration = tls
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let client = WebPushClient(
            key: P256Key(),
            subject: "mailto:ops@example.com",
            http: http,
            logger: Logger(label: "test.webpush"),
            // A deadline for a machine busy with the whole suite.
            timeout: .seconds(60)
        )
        do {
            try await body(service, client)
        } catch {
            try? await http.shutdown()
            await service.shutdown()
            throw error
        }
        try await http.shutdown()
        await service.shutdown()
    }

    static func subscription(_ browser: MockWebPushService.Subscription) throws -> WebPushSubscription {
        try WebPushSubscription(endpoint: browser.endpoint, p256dh: browser.p256dh, auth: browser.auth)
    }

    static let refresh = WebPushClient.Options(timeToLive: 86_400, urgency: .normal, topic: WebPushClient.topic(for: "user-1"))

    @Test func theServiceDecryptsExactlyWhatWasSentWithItsHeaders() async throws {
        try await Self.withService { service, client in
            let browser = service.subscribe(applicationServerKey: client.key.publicPoint)
            let subscription = try Self.subscription(browser)
            let payload = Array(#"{"herald":{"type":"refresh","badge":2}}"#.utf8)
            #expect(await client.send(payload, to: subscription, options: Self.refresh) == .delivered)
            #expect(await client.send(Array("second".utf8), to: subscription, options: Self.refresh) == .delivered)
            let pushes = service.pushes
            #expect(pushes.map(\.status) == [201, 201])
            #expect(pushes.map(\.plaintext) == [payload, Array("second".utf8)])
            #expect(pushes[0].headers["ttl"] == "86400" && pushes[0].headers["urgency"] == "normal")
            #expect(pushes[0].headers["topic"] == WebPushClient.topic(for: "user-1"))
            #expect(pushes[0].headers["authorization"] == pushes[1].headers["authorization"], "one VAPID token per origin")
        }
        #expect(WebPushClient.topic(for: "a user id with spaces and ünïcode").count == 32)
    }

    @Test func answersAreSortedByWhatTheyMeanForTheSubscription() async throws {
        try await Self.withService { service, client in
            let browser = service.subscribe(applicationServerKey: client.key.publicPoint)
            let subscription = try Self.subscription(browser)
            service.script(browser, [(429, 30), (503, nil), (413, nil), (400, nil)])
            var outcomes: [WebPushOutcome] = []
            for _ in 0..<5 { outcomes.append(await client.send(Array("hi".utf8), to: subscription, options: Self.refresh)) }
            #expect(
                outcomes == [
                    .retry(status: 429, retryAfter: .seconds(30)), .retry(status: 503, retryAfter: nil), .rejected(status: 413),
                    .rejected(status: 400), .delivered,
                ]
            )
            service.unsubscribe(browser)
            #expect(await client.send(Array("hi".utf8), to: subscription, options: Self.refresh) == .gone(status: 410))
            // A payload too large to encrypt into one record is refused before it is sent.
            let large = [UInt8](repeating: 1, count: WebPushPayload.maximumPlaintext + 1)
            #expect(await client.send(large, to: subscription, options: Self.refresh) == .rejected(status: 413))
        }
    }

    @Test func aSubscriptionMadeForAnotherKeyRefusesThisServer() async throws {
        try await Self.withService { service, client in
            let browser = service.subscribe(applicationServerKey: P256Key().publicPoint)
            let subscription = try Self.subscription(browser)
            #expect(
                await client.send(Array("hi".utf8), to: subscription, options: Self.refresh) == .credentialRejected(status: 403)
            )
            #expect(service.pushes.map(\.status) == [403])
        }
    }
}
