import COpenSSL

/// ECDH on P-256 with a one-time key: what Web Push's message encryption does for every message.
///
/// It works on libssl's curve arithmetic (`EC_POINT`) rather than on `EVP_PKEY`s as `P256Key` does:
/// a one-time key is never signed with, stored or exported, and building two `EVP_PKEY`s per message
/// (a generated one, and the peer's from its point) cost as much again as the two multiplications
/// themselves.
public enum P256Agreement {
    /// A fresh key's public point (uncompressed, 65 bytes) and its shared secret with `peer` (an
    /// uncompressed point: the x coordinate of the product, 32 bytes); `nil` if `peer` is not a point
    /// on the curve. `scalar` (32 bytes, big-endian) replaces the fresh key: published test vectors
    /// give one.
    public static func agree(with peer: [UInt8], scalar: [UInt8]? = nil) -> (publicPoint: [UInt8], sharedSecret: [UInt8])? {
        let group = P256Group.shared.group
        guard peer.count == 65, peer[0] == 4, let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        let peerPoint = EC_POINT_new(group)
        let ownPoint = EC_POINT_new(group)
        let product = EC_POINT_new(group)
        let secretScalar = BN_new()
        let x = BN_new()
        defer {
            EC_POINT_free(peerPoint)
            EC_POINT_free(ownPoint)
            EC_POINT_free(product)
            BN_clear_free(secretScalar)
            BN_clear_free(x)
        }
        guard let peerPoint, let ownPoint, let product, let secretScalar, let x,
            EC_POINT_oct2point(group, peerPoint, peer, peer.count, context) == 1,
            EC_POINT_is_on_curve(group, peerPoint, context) == 1
        else {
            ERR_clear_error()
            return nil
        }
        if let scalar {
            guard scalar.count == 32, BN_bin2bn(scalar, 32, secretScalar) != nil else { return nil }
        } else {
            // Uniform in [1, n - 1].
            repeat {
                precondition(BN_priv_rand_range(secretScalar, EC_GROUP_get0_order(group)) == 1, "no randomness for a P-256 key")
            } while BN_is_zero(secretScalar) == 1
        }
        var publicPoint = [UInt8](repeating: 0, count: 65)
        var sharedSecret = [UInt8](repeating: 0, count: 32)
        // P-256's cofactor is 1 and its order prime: a point on the curve times a scalar in
        // [1, n - 1] is never the point at infinity, so both results have coordinates.
        guard EC_POINT_mul(group, ownPoint, secretScalar, nil, nil, context) == 1,
            EC_POINT_point2oct(group, ownPoint, POINT_CONVERSION_UNCOMPRESSED, &publicPoint, 65, context) == 65,
            EC_POINT_mul(group, product, nil, peerPoint, secretScalar, context) == 1,
            EC_POINT_get_affine_coordinates(group, product, x, nil, context) == 1,
            BN_bn2binpad(x, &sharedSecret, 32) == 32
        else {
            ERR_clear_error()
            return nil
        }
        return (publicPoint, sharedSecret)
    }
}

/// The curve's parameters, made once rather than for every agreement (making them is not cheap).
/// libssl only reads a group in arithmetic, so one is shared by every thread.
final class P256Group: @unchecked Sendable {
    let group: OpaquePointer

    private init() {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { preconditionFailure("libssl has no P-256") }
        self.group = group
    }

    static let shared = P256Group()
}
