import COpenSSL
import Foundation

/// Seals secrets at rest with AES-256-GCM (libcrypto): `nonce (12) || ciphertext || tag (16)`.
///
/// A fresh random nonce per sealing; the tag authenticates the ciphertext and `context` (associated
/// data naming what the secret is, so one sealed value cannot be swapped in for another).
public struct SecretBox: Sendable {
    private let key: [UInt8]

    public enum Failure: Error, Equatable {
        case badKey
        case cannotOpen
    }

    /// `key` must be 32 bytes.
    public init(key: [UInt8]) throws(Failure) {
        guard key.count == 32 else { throw .badKey }
        self.key = key
    }

    /// A key from 64 hex characters (`HERALD_SECRET_KEY`).
    public init(hexKey: String) throws(Failure) {
        guard let bytes = Hex.decode(hexKey.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw .badKey }
        try self.init(key: bytes)
    }

    public func seal(_ plaintext: [UInt8], context: String) -> [UInt8] {
        let nonce = SecureRandom.bytes(12)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: 16)
        let context = Array(context.utf8)
        let cipher = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(cipher) }
        var length: Int32 = 0
        var ok = EVP_EncryptInit_ex(cipher, EVP_aes_256_gcm(), nil, key, nonce) == 1
        ok = ok && EVP_EncryptUpdate(cipher, nil, &length, context, Int32(context.count)) == 1
        ok =
            ok
            && ciphertext.withUnsafeMutableBufferPointer { out in
                plaintext.isEmpty || EVP_EncryptUpdate(cipher, out.baseAddress, &length, plaintext, Int32(plaintext.count)) == 1
            }
        ok = ok && EVP_EncryptFinal_ex(cipher, nil, &length) == 1
        ok = ok && EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_GET_TAG, 16, &tag) == 1
        precondition(ok, "AES-256-GCM sealing failed")
        return nonce + ciphertext + tag
    }

    public func open(_ sealed: [UInt8], context: String) throws(Failure) -> [UInt8] {
        guard sealed.count >= 28 else { throw .cannotOpen }
        let nonce = Array(sealed[0..<12])
        let ciphertext = Array(sealed[12..<(sealed.count - 16)])
        var tag = Array(sealed[(sealed.count - 16)...])
        let context = Array(context.utf8)
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        let cipher = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(cipher) }
        var length: Int32 = 0
        var ok = EVP_DecryptInit_ex(cipher, EVP_aes_256_gcm(), nil, key, nonce) == 1
        ok = ok && EVP_DecryptUpdate(cipher, nil, &length, context, Int32(context.count)) == 1
        ok =
            ok
            && plaintext.withUnsafeMutableBufferPointer { out in
                ciphertext.isEmpty || EVP_DecryptUpdate(cipher, out.baseAddress, &length, ciphertext, Int32(ciphertext.count)) == 1
            }
        ok = ok && EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1
        var final = [UInt8](repeating: 0, count: 16)
        ok = ok && EVP_DecryptFinal_ex(cipher, &final, &length) == 1
        guard ok else { throw .cannotOpen }
        return plaintext
    }
}
