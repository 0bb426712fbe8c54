import COpenSSL

/// A P-256 private key for ES256 (the only algorithm APNs accepts for provider tokens), held by libssl.
///
/// Signatures come out in the JOSE form JWTs want — 64 bytes, `r || s` — not the ASN.1 DER that
/// `EVP_DigestSign` produces (APNs accepts both; the standard form is what jwt.io and RFC 7515 verify).
public final class ES256Key: @unchecked Sendable {
    // Immutable after init; libssl allows concurrent signing with one EVP_PKEY.
    private let key: OpaquePointer

    /// Loads an Apple `.p8` key: a PKCS#8 PEM holding a P-256 private key.
    public init(pem: String) throws(APNsCredentialError) {
        // A password callback that refuses: without one, libssl asks for the password of an encrypted
        // key on the terminal, blocking the calling thread.
        guard let key = PEMBytes.read(pem, { bio in PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in -1 }, nil) }) else {
            ERR_clear_error()
            if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || pem.contains("Proc-Type: 4,ENCRYPTED") {
                throw .invalidKey("the key is encrypted; Apple's .p8 keys are not: upload the key as Apple issued it")
            }
            throw .invalidKey("the key is not a PEM private key (an Apple .p8 file)")
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC, Self.isP256(key) else {
            EVP_PKEY_free(key)
            throw .invalidKey("the key is not a P-256 (ES256) elliptic-curve key")
        }
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// Signs `message` with SHA-256; returns the 64-byte `r || s`.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        precondition(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1, "EVP_DigestSignInit failed")
        var length = 0
        precondition(message.withUnsafeBufferPointer { EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) } == 1)
        var der = [UInt8](repeating: 0, count: length)
        let status = der.withUnsafeMutableBufferPointer { output in
            message.withUnsafeBufferPointer { EVP_DigestSign(context, output.baseAddress, &length, $0.baseAddress, $0.count) }
        }
        precondition(status == 1, "EVP_DigestSign failed")
        return ECDSASignature.raw(fromDER: Array(der.prefix(length)))
    }

    /// The public half as a PEM `PUBLIC KEY`, for verifiers (the mock APNs server in tests).
    public var publicKeyPEM: String {
        let bio = BIO_new(BIO_s_mem())
        defer { BIO_free(bio) }
        PEM_write_bio_PUBKEY(bio, key)
        return PEMBytes.string(from: bio)
    }

    static func isP256(_ key: OpaquePointer) -> Bool {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, "group", &name, name.count, &length) == 1 else { return false }
        return String(decoding: name.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
    }
}

/// A P-256 public key that checks ES256 signatures in the `r || s` form.
public final class ES256PublicKey: @unchecked Sendable {
    private let key: OpaquePointer

    public init(pem: String) throws(APNsCredentialError) {
        guard let key = PEMBytes.read(pem, { bio in PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in -1 }, nil) }) else {
            ERR_clear_error()
            throw .invalidKey("not a PEM public key")
        }
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == 64, let der = ECDSASignature.der(fromRaw: signature) else { return false }
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return der.withUnsafeBufferPointer { signatureBuffer in
            message.withUnsafeBufferPointer { messageBuffer in
                EVP_DigestVerify(context, signatureBuffer.baseAddress, signatureBuffer.count, messageBuffer.baseAddress, messageBuffer.count)
            }
        } == 1
    }
}

/// Conversions between ASN.1 DER ECDSA signatures and the fixed-size `r || s` form, through libssl.
enum ECDSASignature {
    static func raw(fromDER der: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 64)
        der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &pointer, buffer.count) else { preconditionFailure("libssl produced a bad signature") }
            defer { ECDSA_SIG_free(signature) }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(signature, &r, &s)
            output.withUnsafeMutableBufferPointer { out in
                _ = BN_bn2binpad(r, out.baseAddress, 32)
                _ = BN_bn2binpad(s, out.baseAddress! + 32, 32)
            }
        }
        return output
    }

    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else { return nil }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer in
            var pointer: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &pointer)
        }
        return der
    }
}

/// PEM text in and out of libssl's memory BIOs.
enum PEMBytes {
    static func read<T>(_ pem: String, _ body: (OpaquePointer?) -> T?) -> T? {
        let bytes = Array(pem.utf8)
        return bytes.withUnsafeBufferPointer { buffer -> T? in
            let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    static func string(from bio: OpaquePointer?) -> String {
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard length > 0, let pointer else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: Int(length)), as: UTF8.self)
    }
}
