import Foundation

/// The push services a subscription's endpoint may name: a browser's endpoint is a URL the server
/// will post to, so any other host — one inside the operator's network, say — is refused when the
/// subscription is registered.
public struct WebPushHosts: Sendable, Equatable {
    /// Host names, each allowing itself and its subdomains.
    public var domains: [String]

    public init(domains: [String]) {
        self.domains = domains.map { $0.lowercased() }
    }

    /// The push services of today's browsers: Chrome, Edge, Opera and Samsung Internet (FCM), Firefox
    /// (Mozilla), Safari (Apple), and Windows' (WNS).
    public static let browsers = WebPushHosts(domains: [
        "fcm.googleapis.com", "push.services.mozilla.com", "push.apple.com", "notify.windows.com",
    ])

    /// Whether `endpoint`'s host is one of `domains` or below one.
    public func allows(_ endpoint: URL) -> Bool {
        guard let host = endpoint.host?.lowercased() else { return false }
        return domains.contains { host == $0 || host.hasSuffix("." + $0) }
    }
}
