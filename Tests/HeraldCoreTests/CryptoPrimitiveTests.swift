import HeraldCore
import Testing

@Suite("Hashing, hex and randomness")
struct CryptoPrimitiveTests {
    @Test func sha256MatchesTheStandardVectors() {
        // FIPS 180-2 test vectors.
        #expect(SHA256.hexDigest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.digest(Array("abc".utf8)).count == 32)
    }

    @Test func hexRoundTripsAndRejectsNonHex() {
        let bytes: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xAB, 0xFF]
        #expect(Hex.encode(bytes) == "00017f80abff")
        #expect(Hex.decode("00017F80ABff") == bytes)
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("") == [])
    }

    @Test func randomTokensHaveTheAskedLengthAndDiffer() {
        let first = SecureRandom.hexToken(byteCount: 32)
        let second = SecureRandom.hexToken(byteCount: 32)
        #expect(first.count == 64)
        #expect(first != second)
        #expect(Hex.decode(first)?.count == 32)
        #expect(SecureRandom.bytes(0).isEmpty)
    }
}
