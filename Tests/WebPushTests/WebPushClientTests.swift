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
    /// A client with a fresh VAPID key for a fresh mock push service (one without HTTP/2 if
    /// `http1Only`), both shut down after `body`.
    static func withService(http1Only: Bool = false, _ body: (MockWebPushService, WebPushClient) async throws -> Void) async throws {
        let service = try await MockWebPushService.start(http1Only: http1Only)
        var configuration = HTTPClient.Configuration()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(service.trustRootFile)]
        configuration.tlsConfiguration = tls
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let client = try WebPushClient(
            key: P256Key(),
            subject: "mailto:ops@example.com",
            // A deadline for a machine busy with the whole suite.
            configuration: .init(timeout: .seconds(60), additionalTrustRootFiles: [service.trustRootFile]),
            http: http,
            logger: Logger(label: "test.webpush")
        )
        do {
            try await body(service, client)
        } catch {
            await client.shutdown()
            try? await http.shutdown()
            await service.shutdown()
            throw error
        }
        await client.shutdown()
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
            #expect(pushes.allSatisfy { $0.overHTTP2 })
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

    @Test func aBatchGoesToEachServiceAndAnswersInOrder() async throws {
        try await Self.withService { service, client in
            let other = try await MockWebPushService.start()
            let browsers = (0..<40).map { index in
                (index.isMultiple(of: 2) ? service : other).subscribe(applicationServerKey: client.key.publicPoint)
            }
            service.unsubscribe(browsers[4])
            other.script(browsers[7], [(429, 5)])
            let messages = try browsers.enumerated().map { index, browser in
                WebPushClient.Message(payload: Array("message \(index)".utf8), subscription: try Self.subscription(browser), options: Self.refresh)
            }
            let results = await client.send(messages)
            let expected: [WebPushOutcome] = browsers.indices.map { index in
                switch index {
                case 4: .gone(status: 410)
                case 7: .retry(status: 429, retryAfter: .seconds(5))
                default: .delivered
                }
            }
            #expect(results.map(\.outcome) == expected)
            // Each service decrypted its own half, each message once, over HTTP/2.
            for (mock, parity) in [(service, 0), (other, 1)] {
                let received = mock.pushes.filter { $0.status != 410 }
                #expect(
                    Set(received.compactMap { $0.plaintext.map { String(decoding: $0, as: UTF8.self) } })
                        == Set(browsers.indices.filter { $0 % 2 == parity && $0 != 4 }.map { "message \($0)" })
                )
                #expect(received.count == 20 - (parity == 0 ? 1 : 0) && received.allSatisfy { $0.overHTTP2 })
            }
            // A batch whose deadline has passed is not sent.
            let late = await client.send(Array(messages.prefix(3)), deadline: .now - .seconds(1))
            #expect(late.allSatisfy { if case .unreachable = $0.outcome { true } else { false } })
            #expect(service.pushes.count + other.pushes.count == 40)
            await other.shutdown()
        }
    }

    @Test func aServiceWithoutHTTP2IsSentToOverHTTP1() async throws {
        try await Self.withService(http1Only: true) { service, client in
            let browsers = (0..<5).map { _ in service.subscribe(applicationServerKey: client.key.publicPoint) }
            let messages = try browsers.map {
                WebPushClient.Message(payload: Array("hi".utf8), subscription: try Self.subscription($0), options: Self.refresh)
            }
            #expect(await client.send(messages).map(\.outcome) == Array(repeating: .delivered, count: 5))
            #expect(await client.send(Array(messages.prefix(2))).map(\.outcome) == [.delivered, .delivered])
            let pushes = service.pushes
            #expect(pushes.count == 7 && pushes.allSatisfy { $0.status == 201 && $0.plaintext == Array("hi".utf8) && !$0.overHTTP2 })
        }
    }
}
