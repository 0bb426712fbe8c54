/// The session token every request carries, and the app's way to get a new one when the server
/// refuses it (`HeraldClient.Configuration.tokenProvider`).
///
/// A refused token asks the provider once, whoever noticed first; requests that were refused with the
/// same token wait for that answer instead of asking again. Without a token (nobody signed in) every
/// request fails with `HeraldClientError.signedOut` before it is sent.
actor SessionCredentials {
    typealias Provider = @Sendable () async throws -> String

    private(set) var token: String?
    private let provider: Provider?
    private var refreshing: Task<String?, Never>?

    init(token: String?, provider: Provider?) {
        self.token = token
        self.provider = provider
    }

    /// The token to send; `signedOut` when there is none.
    func current() throws -> String {
        guard let token else { throw HeraldClientError.signedOut }
        return token
    }

    /// A token to try after `refused` was refused: a newer one if another request already got it, else
    /// the provider's. `nil` when there is no provider, it failed, or nobody is signed in any more.
    func renewed(after refused: String) async -> String? {
        guard let token else { return nil }
        if token != refused { return token }
        if let refreshing { return await refreshing.value }
        guard let provider else { return nil }
        let task = Task<String?, Never> { try? await provider() }
        refreshing = task
        let fresh = await task.value
        refreshing = nil
        // Signed out (or in as someone else) while the provider was asked: its token is not wanted.
        guard self.token == refused, let fresh else { return nil }
        self.token = fresh
        return fresh
    }

    /// A new token from the app (signing in, or its backend renewed the session).
    func replace(_ token: String?) {
        self.token = token
    }
}
