import COpenSSL

/// Comparisons whose duration does not depend on where the inputs differ.
public enum ConstantTime {
    /// True when `a` and `b` are equal. Secrets of different lengths are compared through their
    /// SHA-256 digests, so neither the length nor the content leaks through timing.
    public static func equals(_ a: String, _ b: String) -> Bool {
        equals(Array(a.utf8), Array(b.utf8))
    }

    /// True when the byte strings are equal; compared through their digests like the strings.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let left = SHA256.digest(a)
        let right = SHA256.digest(b)
        return left.withUnsafeBytes { l in
            right.withUnsafeBytes { r in CRYPTO_memcmp(l.baseAddress, r.baseAddress, l.count) == 0 }
        }
    }
}
