import Foundation
import HeraldCrypto
import Testing
import WebPush

@Suite("Web Push message encryption")
struct WebPushPayloadTests {
    /// RFC 8291, Appendix A.
    enum Vector {
        static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
        static let senderScalar = bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")
        static let senderPoint = bytes("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
        static let receiverScalar = bytes("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")
        static let receiverPoint = bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
        static let auth = bytes("BTBZMqHH6r4Tts7J_aSIgg")
        static let salt = bytes("DGv6ra1nlYgDCS1FRnbzlw")
        static let body = bytes(
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        )

        static func bytes(_ text: String) -> [UInt8] { Base64URL.decode(text)! }
    }

    @Test func encryptionReproducesRFC8291sExample() throws {
        let body = try WebPushPayload.encrypt(
            Vector.plaintext,
            p256dh: Vector.receiverPoint,
            auth: Vector.auth,
            senderScalar: Vector.senderScalar,
            salt: Vector.salt
        )
        #expect(body == Vector.body)
    }

    @Test func decryptionReadsRFC8291sExample() throws {
        let receiver = try #require(P256Key(scalar: Vector.receiverScalar, point: Vector.receiverPoint))
        #expect(try WebPushPayload.decrypt(Vector.body, receiver: receiver, auth: Vector.auth) == Vector.plaintext)
        // Another authentication secret, or a flipped byte, does not open it.
        #expect(throws: WebPushPayload.Failure.cannotOpen) {
            try WebPushPayload.decrypt(Vector.body, receiver: receiver, auth: SecureRandom.bytes(16))
        }
        var flipped = Vector.body
        flipped[100] ^= 1
        #expect(throws: WebPushPayload.Failure.cannotOpen) { try WebPushPayload.decrypt(flipped, receiver: receiver, auth: Vector.auth) }
        #expect(throws: WebPushPayload.Failure.malformed) {
            try WebPushPayload.decrypt(Array(Vector.body.prefix(80)), receiver: receiver, auth: Vector.auth)
        }
    }

    @Test func everyMessageIsFreshAndRoundTripsUpToTheLimit() throws {
        let receiver = P256Key()
        let auth = SecureRandom.bytes(16)
        let message = Array(#"{"herald":{"v":1,"channels":["news"]}}"#.utf8)
        let first = try WebPushPayload.encrypt(message, p256dh: receiver.publicPoint, auth: auth)
        let second = try WebPushPayload.encrypt(message, p256dh: receiver.publicPoint, auth: auth)
        #expect(first != second, "a fresh key and salt per message")
        #expect(try WebPushPayload.decrypt(first, receiver: receiver, auth: auth) == message)
        // Trailing zeros of the payload survive: only the padding after the delimiter goes.
        let zeros = message + [0, 0]
        #expect(
            try WebPushPayload.decrypt(WebPushPayload.encrypt(zeros, p256dh: receiver.publicPoint, auth: auth), receiver: receiver, auth: auth)
                == zeros
        )
        let largest = [UInt8](repeating: 7, count: WebPushPayload.maximumPlaintext)
        let body = try WebPushPayload.encrypt(largest, p256dh: receiver.publicPoint, auth: auth)
        #expect(body.count == 4096)
        #expect(try WebPushPayload.decrypt(body, receiver: receiver, auth: auth) == largest)
        #expect(throws: WebPushPayload.Failure.tooLarge) { try WebPushPayload.encrypt(largest + [7], p256dh: receiver.publicPoint, auth: auth) }
    }

    @Test func subscriptionsAreCheckedFieldByField() throws {
        let point = Base64URL.encode(P256Key().publicPoint)
        let auth = Base64URL.encode(SecureRandom.bytes(16))
        let subscription = try WebPushSubscription(endpoint: "https://push.example.net:8443/wpush/v2/abc", p256dh: point, auth: auth + "==")
        #expect(subscription.origin == "https://push.example.net:8443")
        // The origin as a push service serializes it: lower case, no default port.
        #expect(try WebPushSubscription(endpoint: "https://Push.Example.NET:443/x", p256dh: point, auth: auth).origin == "https://push.example.net")
        #expect(subscription.auth.count == 16)
        func problem(_ endpoint: String, _ p256dh: String, _ auth: String) -> String? {
            do {
                _ = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth)
                return nil
            } catch {
                return error.field
            }
        }
        #expect(problem("http://push.example.net/x", point, auth) == "endpoint")
        #expect(problem("not a url", point, auth) == "endpoint")
        #expect(problem("https://push.example.net/x", String(point.dropLast(2)), auth) == "keys.p256dh")
        #expect(problem("https://push.example.net/x", Base64URL.encode([4] + [UInt8](repeating: 1, count: 64)), auth) == "keys.p256dh")
        #expect(problem("https://push.example.net/x", point, Base64URL.encode(SecureRandom.bytes(15))) == "keys.auth")
        #expect(throws: Never.self) { try WebPushSubscription(endpoint: "http://127.0.0.1:9/x", p256dh: point, auth: auth, allowHTTP: true) }
    }
}

@Suite("VAPID")
struct VAPIDTests {
    @Test func aPushServiceAcceptsTheTokenForItsOriginOnly() throws {
        let key = P256Key()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let header = VAPID.authorization(
            key: key,
            audience: "https://push.example.net",
            subject: "mailto:ops@example.com",
            expiresAt: now + 12 * 3600
        )
        let verified = try #require(VAPID.verify(header, audience: "https://push.example.net", now: now))
        #expect(verified.publicKey == key.publicPoint)
        #expect(verified.subject == "mailto:ops@example.com")
        #expect(VAPID.verify(header, audience: "https://other.example.net", now: now) == nil)
        #expect(VAPID.verify(header, audience: "https://push.example.net", now: now + 13 * 3600) == nil, "expired")
        let tooLong = VAPID.authorization(
            key: key,
            audience: "https://push.example.net",
            subject: "mailto:ops@example.com",
            expiresAt: now + 25 * 3600
        )
        #expect(VAPID.verify(tooLong, audience: "https://push.example.net", now: now) == nil, "more than a day ahead")
        // Another server's key under the same token: the signature does not hold.
        let swapped = header.replacingOccurrences(of: Base64URL.encode(key.publicPoint), with: Base64URL.encode(P256Key().publicPoint))
        #expect(VAPID.verify(swapped, audience: "https://push.example.net", now: now) == nil)
    }
}
