import Foundation

/// The web origins whose pages may call Herald's user routes from a browser (`HERALD_CORS_ORIGINS`):
/// exact origins, `scheme://host[:port]` (`https://app.example.com`, or a hybrid app's web view such
/// as `capacitor://localhost`), never a wildcard — a page on any other origin is refused. A page on
/// Herald's own origin needs no listing.
public struct CrossOriginPolicy: Sendable, Equatable {
    /// Serialized origins: lower-case scheme and host, the port only when not the scheme's default.
    public private(set) var origins: Set<String>

    /// No origin but Herald's own.
    public static let sameOriginOnly = CrossOriginPolicy(checked: [])

    private init(checked origins: Set<String>) {
        self.origins = origins
    }

    /// The origins listed in `text`, comma-separated; throws, naming the entry, for one that is not an
    /// origin (a path, a query, a wildcard, credentials).
    public init(parsing text: String) throws(ConfigurationError) {
        var origins = Set<String>()
        for entry in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            guard let origin = Self.serialized(entry) else {
                throw ConfigurationError(
                    "HERALD_CORS_ORIGINS must list origins such as https://app.example.com (scheme, host and port only; no '*'), got '\(entry)'"
                )
            }
            origins.insert(origin)
        }
        self.init(checked: origins)
    }

    /// Whether a request whose `Origin` is `origin` may go on: no `Origin`, a listed origin, the origin
    /// the request was sent to (`host`, its `Host` header), or a WebSocket library's `ws:`/`wss:`
    /// origin (native clients' libraries put the socket's own URL there; no browser page has one).
    func admits(origin: String?, host: String?) -> Bool {
        guard let origin else { return true }
        if lists(origin) || Self.isSameOrigin(origin, host: host) { return true }
        let scheme = origin.prefix { $0 != ":" }.lowercased()
        return scheme == "ws" || scheme == "wss"
    }

    /// Whether `origin` (an `Origin` header) is listed.
    func lists(_ origin: String) -> Bool {
        Self.serialized(origin).map(origins.contains) ?? false
    }

    /// Whether `origin` is a web page's (`http` or `https`) on the host and port the request went to.
    /// The scheme cannot be compared: behind a proxy that ends TLS, Herald itself hears plain HTTP.
    /// (Behind a proxy that rewrites `Host`, list the public origin instead.)
    static func isSameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, let components = URLComponents(string: origin), let originHost = components.host, !originHost.isEmpty,
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return false }
        let port = components.port.map { ":\($0)" } ?? ""
        return (originHost + port).lowercased() == host.lowercased()
    }

    /// `text` as a browser serializes an origin, or nil if it is not one.
    static func serialized(_ text: String) -> String? {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(), !scheme.isEmpty,
            let host = components.host?.lowercased(), !host.isEmpty, !host.contains("*"), components.user == nil,
            components.password == nil, components.query == nil, components.fragment == nil, components.path.isEmpty
        else { return nil }
        let defaultPort = ["https": 443, "http": 80][scheme]
        let port = components.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        return "\(scheme)://\(host)\(port)"
    }
}
