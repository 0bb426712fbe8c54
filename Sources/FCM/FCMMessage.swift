import HeraldCrypto

/// One message for FCM's HTTP v1 API (`projects/{id}/messages:send`), to one registration token.
///
/// A refresh is a data-only message at normal priority with a collapse key (Android's counterpart of
/// `content-available`: the app wakes in the background, nothing shows, and queued refreshes collapse
/// into one); an alert adds a notification (title, body, sound) at high priority. Data values are
/// strings, as FCM requires.
public struct FCMMessage: Sendable {
    public enum Priority: String, Sendable {
        case normal = "NORMAL"
        case high = "HIGH"
    }

    public struct Notification: Sendable, Equatable {
        public var title: String?
        public var body: String
        public var sound: String?

        public init(title: String?, body: String, sound: String?) {
            self.title = title
            self.body = body
            self.sound = sound
        }
    }

    public var token: String
    /// In order; keys and values as the app reads them from `RemoteMessage.getData()`.
    public var data: [(key: String, value: String)]
    public var notification: Notification?
    public var priority: Priority
    public var collapseKey: String?
    /// How long FCM keeps the message for an offline device, in seconds.
    public var timeToLive: Int?

    public init(
        token: String,
        data: [(key: String, value: String)],
        notification: Notification? = nil,
        priority: Priority,
        collapseKey: String? = nil,
        timeToLive: Int? = nil
    ) {
        self.token = token
        self.data = data
        self.notification = notification
        self.priority = priority
        self.collapseKey = collapseKey
        self.timeToLive = timeToLive
    }

    /// The request body: `{"message":{…}}`, written by hand (it is on every push's path).
    public var body: [UInt8] {
        var text = #"{"message":{"token":"# + JSONString.quoted(token)
        if let notification {
            text += #","notification":{"#
            if let title = notification.title { text += #""title":"# + JSONString.quoted(title) + "," }
            text += #""body":"# + JSONString.quoted(notification.body) + "}"
        }
        text += #","data":{"#
        for (index, entry) in data.enumerated() {
            if index > 0 { text += "," }
            text += JSONString.quoted(entry.key) + ":" + JSONString.quoted(entry.value)
        }
        text += #"},"android":{"priority":""# + priority.rawValue + "\""
        if let collapseKey { text += #","collapse_key":"# + JSONString.quoted(collapseKey) }
        if let timeToLive { text += #","ttl":"\#(timeToLive)s""# }
        if let sound = notification?.sound { text += #","notification":{"sound":"# + JSONString.quoted(sound) + "}" }
        text += "}}}"
        return Array(text.utf8)
    }
}
