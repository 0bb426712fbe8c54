import COpenSSL

/// SHA-256 through libcrypto's EVP interface.
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let input = Array(bytes)
        let status = input.withUnsafeBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                EVP_Digest(inputBuffer.baseAddress, inputBuffer.count, outputBuffer.baseAddress, &length, EVP_sha256(), nil)
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
