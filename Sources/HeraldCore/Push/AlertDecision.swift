import Foundation

/// Whether a notification gets an alert push to a user at a given time.
public enum AlertDecision: Sendable, Equatable {
    case send(forced: Bool)
    case suppressed(Reason)

    public enum Reason: String, Sendable {
        case snoozed
        case weeklyDoNotDisturb = "weekly_do_not_disturb"
        case doNotDisturb = "do_not_disturb"
        case triggerOff = "trigger_off"
        case notMentioned = "not_mentioned"
        case categoryOff = "category_off"
        /// The user already got the cap of the notification's throttle within its window.
        case throttled
    }

    public var sends: Bool {
        if case .send = self { return true }
        return false
    }

    /// The decision, in the seed's order: a forced push wins; else the user's choice for the category
    /// (`categoryPush`: theirs, or the channel's default for it) suppresses; else snooze does; else, when the
    /// user has weekly schedules, a window of that weekday (in the user's time zone) does, and
    /// otherwise the legacy daily window; then the channel's trigger option (`default`: the user's)
    /// — `off` never pushes, `mention_only` pushes only notifications that mention the user; last, an
    /// alert that would go out is held back when the user is at the throttle's cap (`throttled`), so
    /// only alerts the user would have heard are throttled.
    public static func decide(
        preferences: PushPreferences,
        channelOption: PushPreferences.ChannelTriggerOption,
        mentioned: Bool,
        forced: Bool,
        categoryPush: Bool = true,
        throttled: Bool = false,
        at date: Date
    ) -> AlertDecision {
        if forced { return .send(forced: true) }
        if !categoryPush { return .suppressed(.categoryOff) }
        if let snooze = preferences.snooze {
            let now = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
            if snooze.start <= now && now < snooze.end { return .suppressed(.snoozed) }
        }
        let (weekday, time) = localTime(of: date, in: preferences.timeZone)
        if !preferences.schedules.isEmpty {
            let windows = preferences.schedules.filter { $0.day == weekday }.flatMap(\.windows)
            if windows.contains(where: { $0.covers(time) }) { return .suppressed(.weeklyDoNotDisturb) }
        } else if let window = preferences.doNotDisturb, window.covers(time) {
            return .suppressed(.doNotDisturb)
        }
        let option: PushPreferences.TriggerOption
        switch channelOption {
        case .default: option = preferences.triggerOption
        case .all: option = .all
        case .mentionOnly: option = .mentionOnly
        case .off: option = .off
        }
        switch option {
        case .all: break
        case .mentionOnly: if !mentioned { return .suppressed(.notMentioned) }
        case .off: return .suppressed(.triggerOff)
        }
        return throttled ? .suppressed(.throttled) : .send(forced: false)
    }

    /// The weekday and time of day of `date` in the named zone (UTC when the name is unknown).
    static func localTime(of date: Date, in zoneName: String) -> (PushPreferences.Weekday, PushPreferences.TimeOfDay) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zoneName) ?? TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.weekday, .hour, .minute], from: date)
        return (
            PushPreferences.Weekday(gregorian: parts.weekday ?? 1) ?? .sunday,
            PushPreferences.TimeOfDay(hour: parts.hour ?? 0, minute: parts.minute ?? 0)
        )
    }
}
