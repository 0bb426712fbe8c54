public import Foundation
public import Observation

/// A chat channel as a conversation view shows it: oldest at the top, newest at the bottom, grouped by
/// day, each message with its time; older pages load when the user scrolls to the top. For SwiftUI
/// (it is `@Observable`) and UIKit.
@MainActor
@Observable
public final class ChatModel {
    /// One message.
    public struct Message: Sendable, Identifiable, Equatable {
        public var notification: HeraldNotification
        /// When it was sent (shown beside it).
        public var time: Date { notification.createdAt }
        public var id: String { notification.id }
    }

    /// The messages of one day, oldest first.
    public struct Day: Sendable, Identifiable, Equatable {
        /// The day's start, in the model's calendar.
        public var date: Date
        public var messages: [Message]
        public var id: Date { date }
    }

    public let channelURL: String
    /// The list's state.
    public var phase: ViewPhase { loader.phase }
    /// An older page is loading.
    public var isLoadingOlder: Bool { loader.isLoadingOlder }
    /// The last older page failed (`loadOlder()` tries again).
    public var loadOlderError: HeraldClientError? { loader.olderError }
    /// The calendar days are grouped by (its time zone decides where a day ends).
    @ObservationIgnored public var calendar: Calendar

    @ObservationIgnored private let client: HeraldClient
    @ObservationIgnored private let loader = CollectionLoader()
    private var collection: NotificationCollection? { loader.collection }

    public init(client: HeraldClient, channelURL: String, calendar: Calendar = .current) {
        self.client = client
        self.channelURL = channelURL
        self.calendar = calendar
    }

    /// Oldest first: the newest is the last, at the bottom.
    public var messages: [Message] {
        (collection?.notifications ?? []).reversed().map { Message(notification: $0) }
    }

    /// The messages by day, oldest day first.
    public var days: [Day] {
        Self.days(of: messages, calendar: calendar)
    }

    /// `messages` (oldest first) grouped by the day `calendar` puts each in.
    static func days(of messages: [Message], calendar: Calendar) -> [Day] {
        var days: [Day] = []
        for message in messages {
            let day = calendar.startOfDay(for: message.time)
            if days.last?.date == day {
                days[days.count - 1].messages.append(message)
            } else {
                days.append(Day(date: day, messages: [message]))
            }
        }
        return days
    }

    /// No older messages are left to load.
    public var isAtStart: Bool {
        collection.map { !$0.hasPrevious } ?? false
    }

    /// The channel's unread count.
    public var unreadCount: Int {
        collection?.state.unreadCount ?? 0
    }

    /// Opens the view: takes the collection (the cache's last state shows at once) and refreshes.
    public func open() async {
        loader.take(await client.collection(channelURL: channelURL))
        await refresh()
    }

    /// Brings the conversation up to date.
    public func refresh() async {
        guard collection != nil else { return await open() }
        await loader.refresh()
    }

    /// Loads the next older page (the user scrolled to the top); does nothing at the start.
    public func loadOlder() async {
        await loader.loadOlder()
    }

    /// Marks the conversation read (the user is looking at its end).
    public func markRead() async throws {
        try await collection?.markRead()
    }
}
