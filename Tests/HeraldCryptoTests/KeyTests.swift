import HeraldCrypto
import Testing

@Suite("Keys, key agreement and derivation")
struct KeyTests {
    @Test func hkdfMatchesRFC5869() {
        // RFC 5869, test case 1.
        let okm = HKDF.derive(
            key: [UInt8](repeating: 0x0b, count: 22),
            salt: Hex.decode("000102030405060708090a0b0c")!,
            info: Hex.decode("f0f1f2f3f4f5f6f7f8f9")!,
            length: 42
        )
        #expect(Hex.encode(okm) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    @Test func aesGCMMatchesTheSpecificationsVectorsAndRefusesTampering() throws {
        // The GCM specification's test cases 1 and 2 (AES-128, zero key and nonce).
        let (key, nonce) = ([UInt8](repeating: 0, count: 16), [UInt8](repeating: 0, count: 12))
        #expect(Hex.encode(AESGCM.seal([], key: key, nonce: nonce)) == "58e2fccefa7e3061367f1d57a4e7455a")
        let sealed = AESGCM.seal([UInt8](repeating: 0, count: 16), key: key, nonce: nonce)
        #expect(Hex.encode(sealed) == "0388dace60b6a392f328c2b971b2fe78" + "ab6e47d42cec13bdf53a67b21257bddf")
        #expect(try AESGCM.open(sealed, key: key, nonce: nonce) == [UInt8](repeating: 0, count: 16))
        var tampered = sealed
        tampered[3] ^= 1
        #expect(throws: AESGCM.Failure.self) { try AESGCM.open(tampered, key: key, nonce: nonce) }
        #expect(throws: AESGCM.Failure.self) { try AESGCM.open(sealed, key: key, nonce: nonce, authenticating: [1]) }
        // Sealing at rest (AES-256) still opens only with its own context.
        let box = try SecretBox(key: SecureRandom.bytes(32))
        #expect(try box.open(box.seal(Array("secret".utf8), context: "a"), context: "a") == Array("secret".utf8))
        #expect(throws: SecretBox.Failure.cannotOpen) { try box.open(box.seal(Array("secret".utf8), context: "a"), context: "b") }
    }

    @Test func p256KeysAgreeSignAndRoundTrip() throws {
        let (alice, bob) = (P256Key(), P256Key())
        #expect(alice.publicPoint.count == 65 && alice.publicPoint[0] == 4)
        let secret = alice.sharedSecret(with: bob.publicKey)
        #expect(secret.count == 32)
        #expect(secret == bob.sharedSecret(with: try #require(P256PublicKey(point: alice.publicPoint))))
        // Stored as PEM and loaded again: the same key.
        let again = try P256Key(pem: alice.pem)
        #expect(again.publicPoint == alice.publicPoint)
        let message = Array("header.claims".utf8)
        #expect(alice.publicKey.isValidSignature(again.sign(message), for: message))
        #expect(!bob.publicKey.isValidSignature(alice.sign(message), for: message))
    }

    @Test func p256PointsAndPairsAreChecked() throws {
        let key = P256Key()
        var offCurve = key.publicPoint
        offCurve[64] ^= 1
        #expect(P256PublicKey(point: offCurve) == nil)
        #expect(P256PublicKey(point: Array(key.publicPoint.dropLast())) == nil)
        var compressedTag = key.publicPoint
        compressedTag[0] = 2
        #expect(P256PublicKey(point: compressedTag) == nil)
        // A scalar with the point of another key is not a pair.
        let scalarOfVector = Base64URL.decode("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")!
        let pointOfVector = Base64URL.decode("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")!
        #expect(P256Key(scalar: scalarOfVector, point: pointOfVector)?.publicPoint == pointOfVector)
        #expect(P256Key(scalar: scalarOfVector, point: key.publicPoint) == nil)
        #expect(throws: CryptoKeyError.self) { try P256Key(pem: RS256Key().pem) }
    }

    @Test func oneTimeAgreementsMatchTheKeysAndRefuseOffCurvePoints() throws {
        let receiver = P256Key()
        let first = try #require(P256Agreement.agree(with: receiver.publicPoint))
        let second = try #require(P256Agreement.agree(with: receiver.publicPoint))
        #expect(first.publicPoint != second.publicPoint && first.sharedSecret != second.sharedSecret)
        // The receiver, on libssl's key API, derives the same secret from the one-time point.
        for agreement in [first, second] {
            #expect(agreement.sharedSecret == receiver.sharedSecret(with: try #require(P256PublicKey(point: agreement.publicPoint))))
        }
        // A given scalar makes its own key's point.
        let scalarOfVector = Base64URL.decode("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")!
        let pointOfVector = Base64URL.decode("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")!
        #expect(P256Agreement.agree(with: receiver.publicPoint, scalar: scalarOfVector)?.publicPoint == pointOfVector)
        var offCurve = receiver.publicPoint
        offCurve[64] ^= 1
        #expect(P256Agreement.agree(with: offCurve) == nil)
        #expect(P256Agreement.agree(with: Array(receiver.publicPoint.dropLast())) == nil)
        var compressedTag = receiver.publicPoint
        compressedTag[0] = 2
        #expect(P256Agreement.agree(with: compressedTag) == nil)
        #expect(P256Agreement.agree(with: [4] + [UInt8](repeating: 0, count: 64)) == nil)
    }

    @Test func rs256SignsAndVerifies() throws {
        let key = RS256Key()
        let message = Array("header.claims".utf8)
        let signature = key.sign(message)
        #expect(signature.count == 256)
        let verifier = try RS256PublicKey(pem: key.publicKeyPEM)
        #expect(verifier.isValidSignature(signature, for: message))
        #expect(!verifier.isValidSignature(signature, for: Array("header.claimz".utf8)))
        #expect(try RS256Key(pem: key.pem).sign(message) == signature)  // PKCS#1 v1.5 is deterministic
        #expect(throws: CryptoKeyError("the RSA key has fewer than 2048 bits")) { try RS256Key(pem: RS256Key(generatingBits: 1024).pem) }
        #expect(throws: CryptoKeyError("the key is not an RSA key")) { try RS256Key(pem: P256Key().pem) }
    }
}
