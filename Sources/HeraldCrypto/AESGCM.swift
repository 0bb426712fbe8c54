import COpenSSL

/// AES-GCM through libcrypto, with a 16-byte tag after the ciphertext: AES-128 or AES-256 by the key's
/// length (16 or 32 bytes), a 12-byte nonce.
public enum AESGCM {
    public static let tagLength = 16

    public struct Failure: Error, Equatable {}

    /// `plaintext` encrypted, then the tag over it and `authenticating` (associated data).
    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], authenticating data: [UInt8] = []) -> [UInt8] {
        precondition(nonce.count == 12, "AES-GCM takes a 12-byte nonce here")
        let cipher = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(cipher) }
        var output = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var length: Int32 = 0
        var ok = EVP_EncryptInit_ex(cipher, algorithm(key), nil, key, nonce) == 1
        ok = ok && (data.isEmpty || EVP_EncryptUpdate(cipher, nil, &length, data, Int32(data.count)) == 1)
        ok =
            ok
            && output.withUnsafeMutableBufferPointer { out in
                plaintext.isEmpty || EVP_EncryptUpdate(cipher, out.baseAddress, &length, plaintext, Int32(plaintext.count)) == 1
            }
        ok = ok && EVP_EncryptFinal_ex(cipher, nil, &length) == 1
        ok =
            ok
            && output.withUnsafeMutableBufferPointer { out in
                EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), out.baseAddress! + plaintext.count) == 1
            }
        precondition(ok, "AES-GCM sealing failed")
        return output
    }

    /// The plaintext of `sealed` (ciphertext and tag), if the tag matches it and `authenticating`.
    public static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8], authenticating data: [UInt8] = []) throws(Failure) -> [UInt8] {
        guard sealed.count >= tagLength, nonce.count == 12 else { throw Failure() }
        let ciphertext = Array(sealed.dropLast(tagLength))
        var tag = Array(sealed.suffix(tagLength))
        let cipher = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(cipher) }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        var length: Int32 = 0
        var ok = EVP_DecryptInit_ex(cipher, algorithm(key), nil, key, nonce) == 1
        ok = ok && (data.isEmpty || EVP_DecryptUpdate(cipher, nil, &length, data, Int32(data.count)) == 1)
        ok =
            ok
            && plaintext.withUnsafeMutableBufferPointer { out in
                ciphertext.isEmpty || EVP_DecryptUpdate(cipher, out.baseAddress, &length, ciphertext, Int32(ciphertext.count)) == 1
            }
        ok = ok && EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1
        var final = [UInt8](repeating: 0, count: 16)
        ok = ok && EVP_DecryptFinal_ex(cipher, &final, &length) == 1
        guard ok else {
            ERR_clear_error()
            throw Failure()
        }
        return plaintext
    }

    private static func algorithm(_ key: [UInt8]) -> OpaquePointer? {
        switch key.count {
        case 16: return EVP_aes_128_gcm()
        case 32: return EVP_aes_256_gcm()
        default: preconditionFailure("AES-GCM takes a 16- or 32-byte key")
        }
    }
}
