import HeraldCore
import Testing

@Suite("Session tokens and user ids")
struct SessionTokenTests {
    @Test func tokensNameTheirUserAndCarry256RandomBits() throws {
        let token = SessionToken.generate(for: "user-Ω 1")
        let parsed = try #require(SessionToken(parsing: token.text))
        #expect(parsed.userID == "user-Ω 1")
        #expect(parsed.hash == token.hash)
        #expect(token.text.split(separator: ".").last?.count == 64)
        #expect(SessionToken.generate(for: "a").text != SessionToken.generate(for: "a").text)
    }

    @Test func malformedTokensDoNotParse() {
        let secret = String(repeating: "0", count: 64)
        let malformed = [
            "", "abc", "61.", ".00", "61.zz", "61." + String(repeating: "0", count: 63), "zz." + secret,
            // A second dot, an odd number of id digits, an id that is a control character (DEL).
            "61." + String(secret.dropLast()) + ".", "61.0." + String(repeating: "0", count: 62), "6." + secret, "7f." + secret,
        ]
        for text in malformed {
            #expect(SessionToken(parsing: text) == nil, "\(text)")
        }
        // Either case of hex digits.
        #expect(SessionToken(parsing: "6A." + String(repeating: "F", count: 64))?.userID == "j")
    }

    @Test func userIDRules() {
        #expect(UserID.problem(with: "alice") == nil)
        #expect(UserID.problem(with: String(repeating: "é", count: 128)) == nil)
        #expect(UserID.problem(with: "") != nil)
        #expect(UserID.problem(with: String(repeating: "a", count: 128)) == nil)
        #expect(UserID.problem(with: String(repeating: "a", count: 129)) != nil)
        #expect(UserID.problem(with: "del\u{7F}") != nil)
        #expect(UserID.problem(with: "tab\there") != nil)
        #expect(UserID.problem(with: "nul\u{0}") != nil)
    }

    @Test func constantTimeEquality() {
        #expect(ConstantTime.equals("secret", "secret"))
        #expect(!ConstantTime.equals("secret", "secreT"))
        #expect(!ConstantTime.equals("secret", "secret-longer"))
        #expect(!ConstantTime.equals("", "x"))
    }
}
