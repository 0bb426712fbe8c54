import COpenSSL

/// SHA-256 through libcrypto's EVP interface.
public enum SHA256 {
    /// The algorithm, fetched from libcrypto's default provider once. `EVP_sha256()` would make
    /// OpenSSL 3 look the implementation up again (a locked table search) on every digest and MAC,
    /// and this runs several times per request. Fetched objects are immutable and thread-safe.
    nonisolated(unsafe) static let algorithm: OpaquePointer = {
        guard let fetched = EVP_MD_fetch(nil, "SHA256", nil) else { preconditionFailure("libcrypto has no SHA-256") }
        return fetched
    }()

    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let input = Array(bytes)
        let status = input.withUnsafeBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                EVP_Digest(inputBuffer.baseAddress, inputBuffer.count, outputBuffer.baseAddress, &length, algorithm, nil)
            }
        }
        precondition(status == 1, "EVP_Digest(SHA-256) failed")
        return Array(output.prefix(Int(length)))
    }

    /// The digest of `text`'s UTF-8 bytes, hex-encoded.
    public static func hexDigest(_ text: String) -> String {
        Hex.encode(digest(Array(text.utf8)))
    }
}
