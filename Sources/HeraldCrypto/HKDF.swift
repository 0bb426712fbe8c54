import COpenSSL

/// HKDF with SHA-256 (RFC 5869), extract then expand, through libssl.
public enum HKDF {
    /// `length` bytes (at most 8,160) derived from the input keying material `key` with `salt` and
    /// `info`.
    public static func derive(key: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        precondition(length > 0 && length <= 255 * 32, "HKDF-SHA256 gives 1 to 8,160 bytes")
        let context = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil)
        defer { EVP_PKEY_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: length)
        var produced = length
        let ok =
            EVP_PKEY_derive_init(context) == 1
            && EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()) == 1
            && salt.withUnsafeBufferPointer { EVP_PKEY_CTX_set1_hkdf_salt(context, $0.baseAddress, Int32($0.count)) } == 1
            && key.withUnsafeBufferPointer { EVP_PKEY_CTX_set1_hkdf_key(context, $0.baseAddress, Int32($0.count)) } == 1
            && info.withUnsafeBufferPointer { EVP_PKEY_CTX_add1_hkdf_info(context, $0.baseAddress, Int32($0.count)) } == 1
            && EVP_PKEY_derive(context, &output, &produced) == 1
        precondition(ok && produced == length, "HKDF-SHA256 failed")
        return output
    }
}
