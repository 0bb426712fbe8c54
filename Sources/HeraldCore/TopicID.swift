/// The rules for a topic id: 1–128 characters from letters, digits and `: . _ @ -` (`order:A-1`,
/// `project.42`), so that it needs no escaping in a path or a log line.
public enum TopicID {
    public static let maximumLength = 128

    /// Why `id` is not a valid topic id, or `nil` when it is.
    public static func problem(with id: String) -> String? {
        if id.isEmpty { return "the topic id must not be empty" }
        if id.utf8.count > maximumLength { return "the topic id must be at most \(maximumLength) characters" }
        let allowed = id.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            case UInt8(ascii: ":"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
        return allowed ? nil : "the topic id may hold only letters, digits and : . _ @ -"
    }
}
