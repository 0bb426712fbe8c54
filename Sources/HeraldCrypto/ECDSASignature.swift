import COpenSSL

/// Conversions between ASN.1 DER ECDSA signatures and the fixed-size `r || s` form, through libssl.
enum ECDSASignature {
    static func raw(fromDER der: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 64)
        der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &pointer, buffer.count) else { preconditionFailure("libssl produced a bad signature") }
            defer { ECDSA_SIG_free(signature) }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(signature, &r, &s)
            output.withUnsafeMutableBufferPointer { out in
                _ = BN_bn2binpad(r, out.baseAddress, 32)
                _ = BN_bn2binpad(s, out.baseAddress! + 32, 32)
            }
        }
        return output
    }

    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else { return nil }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer in
            var pointer: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &pointer)
        }
        return der
    }
}
