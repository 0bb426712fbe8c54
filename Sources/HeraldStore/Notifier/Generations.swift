/// A bounded map that forgets its least recently used entries a generation at a time: entries live
/// in the current generation or the one before it; a lookup that finds one in the older generation
/// moves it to the current; when the current generation fills half the capacity, the older one is
/// dropped whole. O(1) per operation, at most `capacity` entries, and what is dropped was untouched
/// for at least a generation — the usual approximation of LRU without a linked list.
public struct Generations<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    public let capacity: Int
    private var current: [Key: Value] = [:]
    private var previous: [Key: Value] = [:]

    public init(capacity: Int) {
        precondition(capacity >= 2, "a capacity of at least two entries")
        self.capacity = capacity
    }

    public var count: Int { current.count + previous.count }

    /// The value for `key`, made current.
    public mutating func value(for key: Key) -> Value? {
        if let value = current[key] { return value }
        guard let value = previous.removeValue(forKey: key) else { return nil }
        current[key] = value
        return value
    }

    /// The value for `key`, without making it current.
    public func peek(_ key: Key) -> Value? {
        current[key] ?? previous[key]
    }

    /// Stores `value` for `key`; returns the entries dropped to make room (the older generation, when
    /// the current one is full).
    @discardableResult
    public mutating func set(_ value: Value, for key: Key) -> [Key: Value] {
        previous[key] = nil
        current[key] = value
        guard current.count >= capacity / 2 else { return [:] }
        defer {
            previous = current
            current = [:]
        }
        return previous
    }

    public mutating func removeValue(for key: Key) {
        current[key] = nil
        previous[key] = nil
    }

    public mutating func removeAll() {
        current = [:]
        previous = [:]
    }

    /// Every entry, current or older.
    public var values: some Sequence<Value> {
        [current.values, previous.values].joined()
    }
}
