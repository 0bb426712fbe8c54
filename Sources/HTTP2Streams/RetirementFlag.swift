import Synchronization

/// Whether a connection has stopped taking new requests (a GOAWAY, a close, a fatal error): set by its
/// handler on the event loop, read by the client as it picks a connection.
final class RetirementFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .relaxed) }

    func set() { value.store(true, ordering: .relaxed) }
}
