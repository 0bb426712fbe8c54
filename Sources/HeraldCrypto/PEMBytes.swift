import COpenSSL

/// PEM text in and out of libssl's memory BIOs.
enum PEMBytes {
    static func read<T>(_ pem: String, _ body: (OpaquePointer?) -> T?) -> T? {
        let bytes = Array(pem.utf8)
        return bytes.withUnsafeBufferPointer { buffer -> T? in
            let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    static func string(from bio: OpaquePointer?) -> String {
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard length > 0, let pointer else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: Int(length)), as: UTF8.self)
    }
}
