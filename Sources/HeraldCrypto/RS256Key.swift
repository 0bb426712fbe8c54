import COpenSSL

/// An RSA private key for RS256 (RSASSA-PKCS1-v1_5 with SHA-256), held by libssl: the signature of a
/// Google service account's OAuth assertion.
public final class RS256Key: @unchecked Sendable {
    // Immutable after init; libssl allows concurrent signing with one EVP_PKEY.
    private let key: OpaquePointer
    /// Shorter keys are refused: RS256 verifiers require at least this many bits.
    public static let minimumBits: Int32 = 2048

    /// Loads a PEM private key (PKCS#8, as a service account's `private_key` holds it, or PKCS#1).
    public init(pem: String) throws(CryptoKeyError) {
        let key = try EVPKey.privateKey(pem: pem)
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            EVP_PKEY_free(key)
            throw CryptoKeyError("the key is not an RSA key")
        }
        guard EVP_PKEY_get_bits(key) >= Self.minimumBits else {
            EVP_PKEY_free(key)
            throw CryptoKeyError("the RSA key has fewer than \(Self.minimumBits) bits")
        }
        self.key = key
    }

    /// A new random key of `bits` bits.
    public init(generatingBits bits: UInt32 = 2048) {
        key = EVPKey.generate("RSA") { EVP_PKEY_CTX_set_rsa_keygen_bits($0, Int32(bits)) }
    }

    deinit { EVP_PKEY_free(key) }

    /// The RS256 signature of `message` (as long as the modulus).
    public func sign(_ message: [UInt8]) -> [UInt8] {
        EVPKey.sign(key, message)
    }

    /// The key as unencrypted PKCS#8 PEM.
    public var pem: String { EVPKey.privatePEM(key) }

    /// The public half as a PEM `PUBLIC KEY`, for verifiers (the mock token endpoint in tests).
    public var publicKeyPEM: String { EVPKey.publicPEM(key) }
}

/// An RSA public key that checks RS256 signatures.
public final class RS256PublicKey: @unchecked Sendable {
    private let key: OpaquePointer

    public init(pem: String) throws(CryptoKeyError) {
        let key = try EVPKey.publicKey(pem: pem)
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            EVP_PKEY_free(key)
            throw CryptoKeyError("the key is not an RSA key")
        }
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        EVPKey.verify(key, signature: signature, message: message)
    }
}
