import COpenSSL

/// A P-256 private key, held by libssl: ES256 signatures (APNs provider tokens, VAPID) and ECDH (Web
/// Push's message encryption).
///
/// Signatures come out in the JOSE form JWTs want — 64 bytes, `r || s` — not the ASN.1 DER that
/// `EVP_DigestSign` produces (APNs accepts both; the standard form is what RFC 7515 verifiers take).
public final class P256Key: @unchecked Sendable {
    // Immutable after init; libssl allows concurrent use of one EVP_PKEY.
    let key: OpaquePointer

    /// Loads a PEM private key (PKCS#8, as Apple's `.p8` files are, or SEC 1).
    public init(pem: String) throws(CryptoKeyError) {
        key = try P256.required(EVPKey.privateKey(pem: pem))
    }

    /// A new random key.
    public init() {
        key = EVPKey.generate("EC") { EVP_PKEY_CTX_set_group_name($0, P256.groupName.description) }
    }

    /// The key of the private scalar `scalar` (32 bytes, big-endian) whose public point is `point`,
    /// as published test vectors give them; `nil` if they do not make a valid key pair.
    public init?(scalar: [UInt8], point: [UInt8]) {
        guard scalar.count == 32, let key = P256.key(point: point, scalar: scalar) else { return nil }
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// Signs `message` with SHA-256; returns the 64-byte `r || s`.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        ECDSASignature.raw(fromDER: EVPKey.sign(key, message))
    }

    /// The shared secret of ECDH with `peer` (the x coordinate of the product: 32 bytes).
    public func sharedSecret(with peer: P256PublicKey) -> [UInt8] {
        let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil)
        defer { EVP_PKEY_CTX_free(context) }
        var length = 0
        // The peer was checked when its key was made (`P256PublicKey`): not again on every derivation,
        // where the check would cost more than the derivation.
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer_ex(context, peer.key, 0) == 1,
            EVP_PKEY_derive(context, nil, &length) == 1
        else { preconditionFailure("ECDH setup failed") }
        var secret = [UInt8](repeating: 0, count: length)
        precondition(EVP_PKEY_derive(context, &secret, &length) == 1, "ECDH failed")
        return Array(secret.prefix(length))
    }

    /// The public point, uncompressed (65 bytes: `04 || x || y`).
    public var publicPoint: [UInt8] { P256.point(of: key) }

    /// The public half.
    public var publicKey: P256PublicKey { P256PublicKey(retaining: key) }

    /// The public half as a PEM `PUBLIC KEY`.
    public var publicKeyPEM: String { EVPKey.publicPEM(key) }

    /// The key as unencrypted PKCS#8 PEM, to be stored sealed.
    public var pem: String { EVPKey.privatePEM(key) }
}

/// A P-256 public key: checks ES256 signatures in the `r || s` form, and is the peer of an ECDH.
public final class P256PublicKey: @unchecked Sendable {
    let key: OpaquePointer

    public init(pem: String) throws(CryptoKeyError) {
        key = try P256.required(EVPKey.publicKey(pem: pem))
    }

    /// The key of an uncompressed point (65 bytes: `04 || x || y`), checked to lie on the curve; `nil`
    /// if it is not one.
    public init?(point: [UInt8]) {
        guard point.count == 65, point[0] == 4, let key = P256.key(point: point, scalar: nil) else { return nil }
        self.key = key
    }

    fileprivate init(retaining key: OpaquePointer) {
        EVP_PKEY_up_ref(key)
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// The point, uncompressed (65 bytes).
    public var point: [UInt8] { P256.point(of: key) }

    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == 64, let der = ECDSASignature.der(fromRaw: signature) else { return false }
        return EVPKey.verify(key, signature: der, message: message)
    }
}

/// The curve's name and the conversions between points, scalars and libssl's keys.
enum P256 {
    /// Static: the parameter builder keeps a pointer to it (see `key(point:scalar:)`).
    static let groupName: StaticString = "prime256v1"

    /// `key` if it is a P-256 key; otherwise it is freed and refused.
    static func required(_ key: OpaquePointer) throws(CryptoKeyError) -> OpaquePointer {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC, isP256(key) else {
            EVP_PKEY_free(key)
            throw CryptoKeyError("the key is not a P-256 (ES256) elliptic-curve key")
        }
        return key
    }

    static func isP256(_ key: OpaquePointer) -> Bool {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, "group", &name, name.count, &length) == 1 else {
            ERR_clear_error()
            return false
        }
        return String(decoding: name.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self) == groupName.description
    }

    static func point(of key: OpaquePointer) -> [UInt8] {
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        let status = EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", &point, point.count, &length)
        precondition(status == 1 && length == 65, "a P-256 key without an uncompressed public point")
        return point
    }

    /// A key from its public point and, for a private key, its scalar; checked (the point on the
    /// curve, and the pair consistent) before it is returned.
    static func key(point: [UInt8], scalar: [UInt8]?) -> OpaquePointer? {
        // The builder keeps pointers to the names and values it is given until `to_param`: static
        // strings, and the point's buffer for the whole of the closure.
        point.withUnsafeBufferPointer { pointBuffer -> OpaquePointer? in
            guard let builder = OSSL_PARAM_BLD_new() else { return nil }
            defer { OSSL_PARAM_BLD_free(builder) }
            let number = scalar.map { bytes in bytes.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) } }
            defer { if let number { BN_clear_free(number) } }
            guard OSSL_PARAM_BLD_push_utf8_string(builder, cString(groupKey), cString(groupName), 0) == 1,
                OSSL_PARAM_BLD_push_octet_string(builder, cString(publicKey), pointBuffer.baseAddress, pointBuffer.count) == 1,
                number.map({ OSSL_PARAM_BLD_push_BN(builder, cString(privateKey), $0) == 1 }) ?? true,
                let parameters = OSSL_PARAM_BLD_to_param(builder)
            else {
                ERR_clear_error()
                return nil
            }
            // It holds a copy of the private scalar, freed without clearing (OpenSSL 3.0 has no
            // OSSL_PARAM_clear_free): raw scalars come only from published test vectors.
            defer { OSSL_PARAM_free(parameters) }
            let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil)
            defer { EVP_PKEY_CTX_free(context) }
            var key: OpaquePointer?
            let selection = scalar == nil ? HERALD_EVP_PKEY_PUBLIC_KEY : HERALD_EVP_PKEY_KEYPAIR
            guard EVP_PKEY_fromdata_init(context) == 1, EVP_PKEY_fromdata(context, &key, selection, parameters) == 1, let key else {
                ERR_clear_error()
                return nil
            }
            let check = EVP_PKEY_CTX_new_from_pkey(nil, key, nil)
            defer { EVP_PKEY_CTX_free(check) }
            // A public point is checked to be on the curve: P-256's cofactor is 1, so a point on it
            // lies in the group, and the full check's multiplication by the order (the larger part of
            // the cost of every Web Push message) tells nothing more.
            guard (scalar == nil ? EVP_PKEY_public_check_quick(check) : EVP_PKEY_pairwise_check(check)) == 1 else {
                ERR_clear_error()
                EVP_PKEY_free(key)
                return nil
            }
            return key
        }
    }

    private static let groupKey: StaticString = "group"
    private static let publicKey: StaticString = "pub"
    private static let privateKey: StaticString = "priv"

    private static func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
