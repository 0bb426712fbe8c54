/// How important a message of the library's is.
public enum HeraldLogLevel: Int, Sendable, Comparable {
    /// Every request and its answer, every stream event.
    case debug
    /// The stream's openings and closings, sign-ins and sign-outs, a device registered again.
    case info
    /// Something the library worked around: a cache that could not open, a refresh that failed and
    /// will be tried again, a rate limit waited out.
    case warning
    /// Something the app may have to act on.
    case error

    public static func < (lhs: HeraldLogLevel, rhs: HeraldLogLevel) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}

/// The app's log handler (`HeraldClient.Configuration.logHandler`): called from any thread, with
/// nothing secret in the message (no session token, no notification content).
public typealias HeraldLogHandler = @Sendable (HeraldLogLevel, String) -> Void

/// The library's log: the app's handler, if it gave one.
struct ClientLog: Sendable {
    let handler: HeraldLogHandler?

    func callAsFunction(_ level: HeraldLogLevel, _ message: @autoclosure () -> String) {
        handler?(level, message())
    }
}
