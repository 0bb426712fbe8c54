/// The session token every request carries, and the app's way to get a new one when the server
/// refuses it (`HeraldClient.Configuration.tokenProvider`).
///
/// A refused token asks the provider once, whoever noticed first; requests that were refused with the
/// same token wait for that answer instead of asking again.
actor SessionCredentials {
    typealias Provider = @Sendable () async throws -> String

    private(set) var token: String
    private let provider: Provider?
    private var refreshing: Task<String?, Never>?

    init(token: String, provider: Provider?) {
        self.token = token
        self.provider = provider
    }

    /// A token to try after `refused` was refused: a newer one if another request already got it, else
    /// the provider's. `nil` when there is no provider or it failed.
    func renewed(after refused: String) async -> String? {
        if token != refused { return token }
        if let refreshing { return await refreshing.value }
        guard let provider else { return nil }
        let task = Task<String?, Never> { try? await provider() }
        refreshing = task
        let fresh = await task.value
        refreshing = nil
        if let fresh { token = fresh }
        return fresh
    }

    func replace(_ token: String) {
        self.token = token
    }
}
