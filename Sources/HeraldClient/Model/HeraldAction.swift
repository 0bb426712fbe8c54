public import Foundation

/// A button a notification offers: press it with `NotificationCollection.press(_:on:)`, which
/// remembers it on every device of the user (`HeraldNotification.actionsDone`).
public struct HeraldAction: Sendable, Hashable, Codable, Identifiable {
    /// The id the app and Herald know the button by (`approve`, `dismiss`).
    public var id: String
    public var label: String
    /// Where it leads; `nil` when the app handles it itself.
    public var url: URL?

    public init(id: String, label: String, url: URL? = nil) {
        self.id = id
        self.label = label
        self.url = url
    }
}
