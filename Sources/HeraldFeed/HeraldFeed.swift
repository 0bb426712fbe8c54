import ArgumentParser
import Foundation
import HeraldClient

/// `herald-feed`: prints a user's collection of one channel, then every change as it happens, over
/// the live stream — the client library used the way an app uses it, in a terminal.
@main
struct HeraldFeed: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-feed",
        abstract: "Print a channel's notifications for a user, then follow them live."
    )

    @Option(help: "The Herald server.")
    var server = "http://127.0.0.1:8080"

    @Option(help: "The user's id.")
    var user: String

    @Option(help: "The user's session token (POST /v1/users/{id}/sessions with the admin token).")
    var session: String

    @Option(help: "The channel to follow.")
    var channel = "orders"

    @Option(help: "Only this category of the channel.")
    var category: String?

    @Option(help: "How many of the newest to print first.")
    var limit = 10

    @Flag(help: "Print the current state and exit instead of following.")
    var once = false

    @MainActor
    func run() async throws {
        guard let url = URL(string: server) else { throw ValidationError("--server must be a URL") }
        let client = await HeraldClient(configuration: .init(serverURL: url), userID: user, sessionToken: session)
        let collection = await client.collection(channelURL: channel, category: category)
        collection.pageSize = max(1, min(limit, 100))
        try await collection.refresh()
        let name = collection.channel?.name ?? channel
        Self.emit("\(name): \(collection.state.unreadCount) unread")
        for notification in collection.notifications.prefix(limit).reversed() { Self.emit(Self.line(notification)) }
        if once { return }

        collection.onUpdate = { update in
            switch update {
            case .changed(let inserted, let updated, let removed):
                for id in inserted { if let item = collection.notifications.first(where: { $0.id == id }) { Self.emit("+ " + Self.line(item)) } }
                for id in updated { if let item = collection.notifications.first(where: { $0.id == id }) { Self.emit("~ " + Self.line(item)) } }
                for id in removed { Self.emit("- #\(id)") }
            case .reloaded:
                Self.emit("(reloaded: \(collection.notifications.count) notifications)")
            }
        }
        client.connect()
        Self.emit("Following \(channel) live; Ctrl-C to stop.")
        // Until interrupted: the stream and its reconnections run in the client.
        while !Task.isCancelled {
            try await Task.sleep(for: .seconds(3600))
        }
    }

    /// Writes a line at once (unbuffered, also into a pipe or a file: the point is to see changes as
    /// they come).
    static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// One notification as a line: time, id, status and what its template rendered.
    static func line(_ notification: HeraldNotification) -> String {
        let time = notification.createdAt.formatted(date: .omitted, time: .standard)
        let text = ["title", "body", "text"].compactMap { notification.data[$0]?.stringValue }.joined(separator: " — ")
        return "\(time) #\(notification.id) [\(notification.status.rawValue.lowercased())] \(text.isEmpty ? "\(notification.data)" : text)"
    }
}
