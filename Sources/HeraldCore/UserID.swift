/// The rules for a user id: 1–128 characters (Unicode code points, as PostgreSQL counts them), none of
/// them control characters.
public enum UserID {
    public static let maximumLength = 128

    /// Why `id` is not a valid user id, or `nil` when it is.
    public static func problem(with id: String) -> String? {
        if id.isEmpty { return "the user id must not be empty" }
        // Most ids are printable ASCII, whose bytes alone decide (every request's session names one).
        if id.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) {
            return id.utf8.count > maximumLength ? tooLong : nil
        }
        if id.unicodeScalars.count > maximumLength { return tooLong }
        if id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "the user id must not contain control characters"
        }
        return nil
    }

    private static let tooLong = "the user id must be at most \(maximumLength) characters"
}
