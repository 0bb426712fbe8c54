/// Why a call to the server failed.
public enum HeraldClientError: Error, Sendable, Equatable {
    /// The server refused the request: its HTTP status and Herald's error `code` and `message`
    /// (`{"error":{"code","message"}}`).
    case server(status: Int, code: String, message: String)
    /// The session token was refused, and the app's token provider (asked once) gave none that works.
    case unauthorized
    /// The request did not complete within its deadline.
    case timedOut
    /// The server's answer could not be read.
    case invalidResponse(String)
}
