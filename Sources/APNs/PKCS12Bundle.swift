import COpenSSL

/// A `.p12` (PKCS#12) client certificate for certificate-based APNs authentication, opened by libssl.
///
/// Opening it checks the password; the certificate and key come out as DER for the TLS stack, and the
/// app's bundle id (the topic) is read from the certificate subject's `UID`, where Apple puts it.
public struct PKCS12Bundle: Sendable {
    public let certificateDER: [UInt8]
    public let privateKeyDER: [UInt8]
    /// The subject's `UID` (Apple's APNs certificates carry the bundle id there), if any.
    public let topic: String?
    /// The end of the certificate's validity, seconds since 1970.
    public let notAfter: Int64?

    public init(bytes: [UInt8], password: String) throws(APNsCredentialError) {
        let p12: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PKCS12(nil, &pointer, buffer.count)
        }
        guard let p12 else {
            ERR_clear_error()
            throw .invalidCertificate("the data is not a PKCS#12 (.p12) file")
        }
        defer { PKCS12_free(p12) }
        var key: OpaquePointer?
        var certificate: OpaquePointer?
        guard PKCS12_parse(p12, password, &key, &certificate, nil) == 1 else {
            ERR_clear_error()
            // The MAC checks the password alone; when it passes, what failed is the contents'
            // encryption — RC2 or 3DES from older Keychain exports, which OpenSSL 3 leaves to its legacy
            // provider.
            guard Self.macVerifies(p12, password: password) else {
                throw .invalidCertificate("the .p12 does not open with this password")
            }
            throw .invalidCertificate(
                """
                the .p12 opens with this password but is encrypted with a legacy algorithm (RC2 or 3DES, \
                from an older Keychain export) that OpenSSL 3 does not enable; export it again with current \
                algorithms: openssl pkcs12 -legacy -in old.p12 -nodes -out both.pem && openssl pkcs12 -export \
                -in both.pem -out new.p12 (then delete both.pem)
                """
            )
        }
        defer {
            EVP_PKEY_free(key)
            X509_free(certificate)
        }
        guard let key, let certificate else { throw .invalidCertificate("the .p12 holds no certificate with its private key") }
        certificateDER = Self.der { i2d_X509(certificate, $0) }
        privateKeyDER = Self.der { i2d_PrivateKey(key, $0) }
        topic = Self.subjectUID(certificate)
        notAfter = Self.notAfter(certificate)
    }

    /// True when the bundle's integrity MAC checks with `password` (libssl's parse tries the empty
    /// password both as "" and as none; so does this).
    private static func macVerifies(_ p12: OpaquePointer, password: String) -> Bool {
        defer { ERR_clear_error() }
        guard PKCS12_mac_present(p12) == 1 else { return false }
        if PKCS12_verify_mac(p12, password, -1) == 1 { return true }
        return password.isEmpty && PKCS12_verify_mac(p12, nil, 0) == 1
    }

    private static func der(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8] {
        let length = encode(nil)
        guard length > 0 else { return [] }
        var output = [UInt8](repeating: 0, count: Int(length))
        output.withUnsafeMutableBufferPointer { buffer in
            var pointer: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = encode(&pointer)
        }
        return output
    }

    private static func subjectUID(_ certificate: OpaquePointer) -> String? {
        guard let name = X509_get_subject_name(certificate) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, NID_userId, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { CRYPTO_free(utf8, #file, #line) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    private static func notAfter(_ certificate: OpaquePointer) -> Int64? {
        guard let time = X509_get0_notAfter(certificate) else { return nil }
        var tm = tm()
        guard ASN1_TIME_to_tm(time, &tm) == 1 else { return nil }
        return Int64(timegm(&tm))
    }
}
