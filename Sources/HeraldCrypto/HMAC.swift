import COpenSSL

/// HMAC-SHA256 through libcrypto.
public enum HMACSHA256 {
    /// The 32-byte MAC of `message` under `key`.
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBufferPointer { keyBuffer in
            message.withUnsafeBufferPointer { messageBuffer in
                output.withUnsafeMutableBufferPointer { outputBuffer in
                    HMAC(
                        SHA256.algorithm,
                        keyBuffer.baseAddress,
                        Int32(keyBuffer.count),
                        messageBuffer.baseAddress,
                        messageBuffer.count,
                        outputBuffer.baseAddress,
                        &length
                    )
                }
            }
        }
        precondition(result != nil, "HMAC-SHA256 failed")
        return Array(output.prefix(Int(length)))
    }
}
