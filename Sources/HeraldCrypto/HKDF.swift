import COpenSSL

/// HKDF with SHA-256 (RFC 5869), extract then expand, through libssl.
public enum HKDF {
    /// The HKDF implementation, fetched from libssl's provider once: a fetch per derivation (as
    /// `EVP_PKEY_CTX_new_id` makes) costs more than the derivation. An `EVP_KDF` is immutable once
    /// fetched and may be used from any thread.
    nonisolated(unsafe) private static let kdf: OpaquePointer = {
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { preconditionFailure("libssl has no HKDF") }
        return kdf
    }()

    /// `length` bytes (at most 8,160) derived from the input keying material `key` with `salt` and
    /// `info`.
    public static func derive(key: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        precondition(length > 0 && length <= 255 * 32, "HKDF-SHA256 gives 1 to 8,160 bytes")
        let context = EVP_KDF_CTX_new(kdf)
        defer { EVP_KDF_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: length)
        // The parameters point into the buffers and static names: all alive for the whole call.
        let ok = key.withUnsafeBytes { keyBytes in
            salt.withUnsafeBytes { saltBytes in
                info.withUnsafeBytes { infoBytes in
                    let parameters = [
                        OSSL_PARAM_construct_utf8_string(name(digestKey), mutableName(sha256), 0),
                        OSSL_PARAM_construct_octet_string(name(keyKey), UnsafeMutableRawPointer(mutating: keyBytes.baseAddress), keyBytes.count),
                        OSSL_PARAM_construct_octet_string(name(saltKey), UnsafeMutableRawPointer(mutating: saltBytes.baseAddress), saltBytes.count),
                        OSSL_PARAM_construct_octet_string(name(infoKey), UnsafeMutableRawPointer(mutating: infoBytes.baseAddress), infoBytes.count),
                        OSSL_PARAM_construct_end(),
                    ]
                    return parameters.withUnsafeBufferPointer { EVP_KDF_derive(context, &output, length, $0.baseAddress) } == 1
                }
            }
        }
        precondition(ok, "HKDF-SHA256 failed")
        return output
    }

    private static let digestKey: StaticString = "digest"
    private static let keyKey: StaticString = "key"
    private static let saltKey: StaticString = "salt"
    private static let infoKey: StaticString = "info"
    private static let sha256: StaticString = "SHA256"

    private static func name(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// libssl reads an input parameter's string, never writes it; its signature takes it mutable.
    private static func mutableName(_ text: StaticString) -> UnsafeMutablePointer<CChar> {
        UnsafeMutablePointer(mutating: name(text))
    }
}
