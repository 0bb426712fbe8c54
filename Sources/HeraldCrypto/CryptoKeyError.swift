/// A key that cannot be used, with a message fit for the operator who supplied it.
public struct CryptoKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
