import Foundation

/// Checks for the http(s) URLs that users and channels carry (profile pictures, cover images).
public enum WebURL {
    public static let maximumLength = 2048

    /// True for an absolute `http` or `https` URL with a host, at most `maximumLength` characters.
    public static func isHTTP(_ text: String) -> Bool {
        guard text.count <= maximumLength, let url = URL(string: text), let scheme = url.scheme?.lowercased() else { return false }
        return (scheme == "http" || scheme == "https") && !(url.host ?? "").isEmpty
    }
}
