/// What a template reads of the digest it renders: `{{batch.count}}` sends so far, `{{batch.others}}`
/// (one fewer), `{{#batch.several}}` (more than one), the variables of the first and of the latest
/// send (`{{batch.first.actor}}`, `{{batch.latest.actor}}`), and `{{#batch.items}}…{{/batch.items}}`
/// over the latest sends' variables, oldest first.
public struct BatchContext: Sendable, Equatable {
    public var count: Int
    public var first: [String: JSONValue]
    public var latest: [String: JSONValue]
    public var items: [[String: JSONValue]]

    public init(count: Int, first: [String: JSONValue], latest: [String: JSONValue], items: [[String: JSONValue]]) {
        self.count = count
        self.first = first
        self.latest = latest
        self.items = items
    }

    /// A notification on its own (a send without a batch, or the first of one): a batch of one.
    public static func single(_ variables: [String: JSONValue]) -> BatchContext {
        BatchContext(count: 1, first: variables, latest: variables, items: [variables])
    }

    /// The names a template may read after `batch.`; `first`, `latest` and `items` are followed by
    /// a variable's name (or hold it in their section).
    static let fields: Set<String> = ["count", "others", "several", "first", "latest", "items"]
}
