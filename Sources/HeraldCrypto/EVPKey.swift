import COpenSSL

/// What the key types share of libssl's `EVP_PKEY`: reading PEM, writing PEM, and signing or verifying
/// with SHA-256.
enum EVPKey {
    /// A private key from PEM (PKCS#8, or the traditional form of its algorithm). Encrypted keys are
    /// refused: the password callback declines, so libssl never asks on the terminal.
    static func privateKey(pem: String) throws(CryptoKeyError) -> OpaquePointer {
        guard let key = PEMBytes.read(pem, { bio in PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil) }) else {
            ERR_clear_error()
            if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || pem.contains("Proc-Type: 4,ENCRYPTED") {
                throw CryptoKeyError("the key is encrypted: supply it unencrypted")
            }
            throw CryptoKeyError("the key is not a PEM private key")
        }
        return key
    }

    static func publicKey(pem: String) throws(CryptoKeyError) -> OpaquePointer {
        guard let key = PEMBytes.read(pem, { bio in PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in -1 }, nil) }) else {
            ERR_clear_error()
            throw CryptoKeyError("not a PEM public key")
        }
        return key
    }

    /// The private key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), unencrypted.
    static func privatePEM(_ key: OpaquePointer) -> String {
        let bio = BIO_new(BIO_s_mem())
        defer { BIO_free(bio) }
        precondition(PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1, "PEM_write_bio_PrivateKey failed")
        return PEMBytes.string(from: bio)
    }

    /// The public half as PEM (`-----BEGIN PUBLIC KEY-----`).
    static func publicPEM(_ key: OpaquePointer) -> String {
        let bio = BIO_new(BIO_s_mem())
        defer { BIO_free(bio) }
        precondition(PEM_write_bio_PUBKEY(bio, key) == 1, "PEM_write_bio_PUBKEY failed")
        return PEMBytes.string(from: bio)
    }

    /// A new key of `algorithm` ("EC" or "RSA"), after `configure` set its parameters.
    static func generate(_ algorithm: String, _ configure: (OpaquePointer?) -> Int32) -> OpaquePointer {
        let context = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil)
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, configure(context) == 1, EVP_PKEY_generate(context, &key) == 1, let key else {
            preconditionFailure("generating a \(algorithm) key failed")
        }
        return key
    }

    /// The SHA-256 signature of `message` as libssl gives it (DER for ECDSA, PKCS#1 v1.5 for RSA).
    static func sign(_ key: OpaquePointer, _ message: [UInt8]) -> [UInt8] {
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        precondition(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1, "EVP_DigestSignInit failed")
        var length = 0
        precondition(message.withUnsafeBufferPointer { EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) } == 1)
        var signature = [UInt8](repeating: 0, count: length)
        let status = signature.withUnsafeMutableBufferPointer { output in
            message.withUnsafeBufferPointer { EVP_DigestSign(context, output.baseAddress, &length, $0.baseAddress, $0.count) }
        }
        precondition(status == 1, "EVP_DigestSign failed")
        return Array(signature.prefix(length))
    }

    static func verify(_ key: OpaquePointer, signature: [UInt8], message: [UInt8]) -> Bool {
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            return false
        }
        let status = signature.withUnsafeBufferPointer { signatureBuffer in
            message.withUnsafeBufferPointer { messageBuffer in
                EVP_DigestVerify(context, signatureBuffer.baseAddress, signatureBuffer.count, messageBuffer.baseAddress, messageBuffer.count)
            }
        }
        ERR_clear_error()
        return status == 1
    }
}
