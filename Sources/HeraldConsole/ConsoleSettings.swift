import Foundation

/// How `herald serve` runs the admin console.
public struct ConsoleSettings: Sendable {
    /// The `console/` directory: `templates/` (swift-mustache) and `assets/` (CSS, JavaScript).
    public var directory: String
    /// How long a sign-in lasts.
    public var sessionLifetime: Duration

    public init(directory: String, sessionLifetime: Duration = .seconds(12 * 3600)) {
        self.directory = directory
        self.sessionLifetime = sessionLifetime
    }
}
