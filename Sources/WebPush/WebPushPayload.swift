import HeraldCrypto

/// Message encryption for Web Push (RFC 8291): the `aes128gcm` content coding (RFC 8188) of one
/// record, keyed by ECDH between a fresh application-server key and the subscription's key, and the
/// subscription's authentication secret.
///
/// The body is `salt (16) || record size (4) || key id length (1) || sender's public key (65) ||
/// ciphertext`; the record is the payload, the delimiter `0x02` and zero padding, sealed with
/// AES-128-GCM.
public enum WebPushPayload {
    /// The record size written in the header: larger than any body a push service takes.
    public static let recordSize: UInt32 = 4096
    /// The largest payload whose encrypted body fits the 4,096 bytes every push service must accept.
    public static let maximumPlaintext = 4096 - headerLength - 1 - AESGCM.tagLength
    static let headerLength = 16 + 4 + 1 + 65

    public enum Failure: Error, Equatable {
        case tooLarge
        case malformed
        case cannotOpen
    }

    /// The encrypted body of `plaintext` for the subscription keys `p256dh` and `auth`. The sender's
    /// key and `salt` are fresh for every message; a test vector passes its own (`senderScalar`).
    public static func encrypt(
        _ plaintext: [UInt8],
        p256dh: [UInt8],
        auth: [UInt8],
        senderScalar: [UInt8]? = nil,
        salt: [UInt8] = SecureRandom.bytes(16)
    ) throws(Failure) -> [UInt8] {
        guard plaintext.count <= maximumPlaintext else { throw .tooLarge }
        guard auth.count == 16, salt.count == 16, let (senderPoint, secret) = P256Agreement.agree(with: p256dh, scalar: senderScalar)
        else { throw .malformed }
        let (key, nonce) = keys(secret: secret, auth: auth, receiver: p256dh, sender: senderPoint, salt: salt)
        var header = salt
        withUnsafeBytes(of: recordSize.bigEndian) { header.append(contentsOf: $0) }
        header.append(UInt8(senderPoint.count))
        header += senderPoint
        return header + AESGCM.seal(plaintext + [2], key: key, nonce: nonce)
    }

    /// The plaintext of `body`, as the user agent holding `receiver` (the subscription's private key)
    /// and `auth` reads it: the push service's side in tests.
    public static func decrypt(_ body: [UInt8], receiver: P256Key, auth: [UInt8]) throws(Failure) -> [UInt8] {
        guard body.count > headerLength, body[20] == 65 else { throw .malformed }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let senderPoint = Array(body[21..<86])
        let sealed = Array(body[86...])
        // One record (RFC 8291 §4), no longer than the record size it declares.
        guard recordSize >= 18, sealed.count <= recordSize, let sender = P256PublicKey(point: senderPoint) else { throw .malformed }
        let (key, nonce) = keys(
            secret: receiver.sharedSecret(with: sender),
            auth: auth,
            receiver: receiver.publicPoint,
            sender: senderPoint,
            salt: salt
        )
        var record: [UInt8]
        do {
            record = try AESGCM.open(sealed, key: key, nonce: nonce)
        } catch {
            throw .cannotOpen
        }
        while record.last == 0 { record.removeLast() }
        // The last record ends with the delimiter 2.
        guard record.last == 2 else { throw .malformed }
        record.removeLast()
        return record
    }

    /// The content-encryption key and nonce of RFC 8291 §3.4 and RFC 8188 §2.2–2.3.
    static func keys(secret: [UInt8], auth: [UInt8], receiver: [UInt8], sender: [UInt8], salt: [UInt8]) -> (key: [UInt8], nonce: [UInt8]) {
        let keyInfo = Array("WebPush: info".utf8) + [0] + receiver + sender
        let material = HKDF.derive(key: secret, salt: auth, info: keyInfo, length: 32)
        let key = HKDF.derive(key: material, salt: salt, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16)
        let nonce = HKDF.derive(key: material, salt: salt, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)
        return (key, nonce)
    }
}
