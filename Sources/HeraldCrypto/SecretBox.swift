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
        return nonce + AESGCM.seal(plaintext, key: key, nonce: nonce, authenticating: Array(context.utf8))
    }

    public func open(_ sealed: [UInt8], context: String) throws(Failure) -> [UInt8] {
        guard sealed.count >= 12 + AESGCM.tagLength else { throw .cannotOpen }
        do {
            return try AESGCM.open(Array(sealed.dropFirst(12)), key: key, nonce: Array(sealed.prefix(12)), authenticating: Array(context.utf8))
        } catch {
            throw .cannotOpen
        }
    }
}
