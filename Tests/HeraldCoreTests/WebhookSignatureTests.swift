import Foundation
import HeraldCore
import Testing

@Suite("Webhook signatures")
struct WebhookSignatureTests {
    static let secret = Array("whsec-test-0123456789abcdef".utf8)
    static let body = Array(#"{"events":[]}"#.utf8)

    /// The value computed independently (Python's `hmac.new(secret, b"1700000000." + body, sha256)`), so
    /// the scheme is the one receivers in any language recompute.
    @Test func theHeaderIsTheHMACOfTheTimeADotAndTheBody() {
        #expect(
            WebhookSignature.header(secret: Self.secret, timestamp: 1_700_000_000, body: Self.body)
                == "t=1700000000,v1=a5e7094959335e4fee59a65b0acdc36286a3224cfe8ea57e94bf675ef12e76d1"
        )
    }

    @Test func verifyRefusesOtherBodiesSecretsAndOldTimes() {
        let header = WebhookSignature.header(secret: Self.secret, timestamp: 1_700_000_000, body: Self.body)
        let then = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(WebhookSignature.verify(header: header, secret: Self.secret, body: Self.body, now: then))
        #expect(WebhookSignature.verify(header: header, secret: Self.secret, body: Self.body, now: then.addingTimeInterval(300)))
        #expect(!WebhookSignature.verify(header: header, secret: Self.secret, body: Self.body, now: then.addingTimeInterval(301)))
        #expect(!WebhookSignature.verify(header: header, secret: Self.secret, body: Self.body, now: then.addingTimeInterval(-301)))
        #expect(!WebhookSignature.verify(header: header, secret: Self.secret, body: Array(#"{"events":[1]}"#.utf8), now: then))
        #expect(!WebhookSignature.verify(header: header, secret: Array("another".utf8), body: Self.body, now: then))
        #expect(!WebhookSignature.verify(header: "t=1700000000", secret: Self.secret, body: Self.body, now: then))
        #expect(!WebhookSignature.verify(header: "garbage", secret: Self.secret, body: Self.body, now: then))
    }
}
