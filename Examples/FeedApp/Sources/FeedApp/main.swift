import Foundation
import HeraldClient

// The smallest use of the library: load a user's collection of a channel and print it.
// swift run FeedApp <server URL> <session token> <channel URL>
let arguments = CommandLine.arguments
guard arguments.count == 4, let server = URL(string: arguments[1]) else {
    print("usage: FeedApp <server URL> <session token> <channel URL>")
    exit(2)
}
let client = try await HeraldClient(configuration: .init(serverURL: server, sessionToken: arguments[2]))
let collection = await client.collection(channelURL: arguments[3])
try await collection.refresh()
for notification in collection.notifications {
    print(notification.id, notification.status.rawValue, notification.data)
}
