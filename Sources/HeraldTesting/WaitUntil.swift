/// Waits until `condition` holds, checking every 5 ms, for at most `timeout`: for state another task,
/// process or server changes. Throws, naming `what`, when the time runs out.
public func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw HeraldProcessError(message: "timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}
