import COpenSSL

/// Cryptographically secure random bytes from libcrypto's `RAND_bytes`.
public enum SecureRandom {
    /// Returns `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let status = buffer.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        // RAND_bytes fails only when the generator cannot be seeded; no secret may be made then.
        precondition(status == 1, "RAND_bytes failed: the system random generator is unavailable")
        return buffer
    }

    /// Returns a random token of `byteCount` bytes, hex-encoded (two characters per byte).
    public static func hexToken(byteCount: Int = 32) -> String {
        Hex.encode(bytes(byteCount))
    }
}
