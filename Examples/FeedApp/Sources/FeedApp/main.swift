import Foundation
import HeraldClient

// The smallest use of the library: load a user's collection of a channel and print it.
// swift run FeedApp <server URL> <user id> <session token> <channel URL>
let arguments = CommandLine.arguments
guard arguments.count == 5, let server = URL(string: arguments[1]) else {
    print("usage: FeedApp <server URL> <user id> <session token> <channel URL>")
    exit(2)
}
let client = await HeraldClient(configuration: .init(serverURL: server), userID: arguments[2], sessionToken: arguments[3])
let collection = await client.collection(channelURL: arguments[4])
try await collection.refresh()
for notification in collection.notifications {
    print(notification.id, notification.status.rawValue, notification.data)
}
