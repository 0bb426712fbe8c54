/// What the layout around every page shows: the title, the navigation with the current section, and
/// the signed-in admin's CSRF token for the sign-out form.
struct ConsoleChrome {
    var title: String
    var section: Section?
    var csrfToken: String?

    /// The console's sections, in the navigation's order.
    enum Section: String, CaseIterable {
        case overview, channels, templates, topics, send, scheduled, notifications, users, push

        var title: String {
            switch self {
            case .overview: "Overview"
            case .channels: "Channels"
            case .templates: "Templates"
            case .topics: "Topics"
            case .send: "Send"
            case .scheduled: "Scheduled"
            case .notifications: "Notifications"
            case .users: "Users"
            case .push: "Push"
            }
        }

        var path: String {
            self == .overview ? "/console" : "/console/\(rawValue)"
        }
    }

    var values: [String: Any] {
        [
            "title": title,
            "signedIn": csrfToken != nil,
            "csrf": csrfToken ?? "",
            "nav": Section.allCases.map { item -> [String: Any] in
                ["title": item.title, "path": item.path, "current": item == section]
            },
        ]
    }
}
