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
        for text in ["", "abc", "61.", ".00", "61.zz", "61." + String(repeating: "0", count: 63), "zz." + String(repeating: "0", count: 64)] {
            #expect(SessionToken(parsing: text) == nil, "\(text)")
        }
    }

    @Test func userIDRules() {
        #expect(UserID.problem(with: "alice") == nil)
        #expect(UserID.problem(with: String(repeating: "é", count: 128)) == nil)
        #expect(UserID.problem(with: "") != nil)
        #expect(UserID.problem(with: String(repeating: "a", count: 129)) != nil)
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
