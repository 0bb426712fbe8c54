import HeraldCore
import Testing

/// AES-256-GCM at rest: what was sealed opens only unchanged, under its own name, with its own key.
@Suite("Secret box")
struct SecretBoxTests {
    let box: SecretBox
    let secret = Array("-----BEGIN PRIVATE KEY-----\nMIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg\n".utf8)

    init() throws {
        box = try SecretBox(key: SecureRandom.bytes(32))
    }

    @Test func whatIsSealedOpensUnderItsOwnNameOnly() throws {
        let sealed = box.seal(secret, context: "apns:prod:secret")
        #expect(sealed.count == 12 + secret.count + 16)
        #expect(try box.open(sealed, context: "apns:prod:secret") == secret)
        // Moved to another credential's name, or to the password's slot: refused.
        #expect(throws: SecretBox.Failure.cannotOpen) { try box.open(sealed, context: "apns:staging:secret") }
        #expect(throws: SecretBox.Failure.cannotOpen) { try box.open(sealed, context: "apns:prod:password") }
        // Under another key: refused.
        let other = try SecretBox(key: SecureRandom.bytes(32))
        #expect(throws: SecretBox.Failure.cannotOpen) { try other.open(sealed, context: "apns:prod:secret") }
        // The empty secret round-trips too.
        #expect(try box.open(box.seal([], context: "x"), context: "x") == [])
    }

    @Test func anyChangedByteIsRefused() {
        let sealed = box.seal(secret, context: "apns:prod:secret")
        // Every byte of the nonce, the ciphertext and the tag, one at a time.
        for index in sealed.indices {
            var tampered = sealed
            tampered[index] ^= 0x01
            #expect(throws: SecretBox.Failure.cannotOpen, "byte \(index) flipped") { try box.open(tampered, context: "apns:prod:secret") }
        }
        #expect(throws: SecretBox.Failure.cannotOpen) { try box.open(Array(sealed.dropLast()), context: "apns:prod:secret") }
        #expect(throws: SecretBox.Failure.cannotOpen) { try box.open(Array(sealed.prefix(27)), context: "apns:prod:secret") }
    }

    @Test func tenThousandSealsNeverRepeatANonce() {
        var nonces = Set<[UInt8]>()
        for _ in 0..<10_000 { nonces.insert(Array(box.seal(secret, context: "n").prefix(12))) }
        #expect(nonces.count == 10_000)
    }

    @Test func keysMustBe32Bytes() {
        #expect(throws: SecretBox.Failure.badKey) { try SecretBox(key: SecureRandom.bytes(16)) }
        #expect(throws: SecretBox.Failure.badKey) { try SecretBox(hexKey: "zz" + String(repeating: "0", count: 62)) }
        #expect(throws: SecretBox.Failure.badKey) { try SecretBox(hexKey: String(repeating: "0", count: 62)) }
    }
}
