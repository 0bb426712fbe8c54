import Foundation

/// A user's push preferences, after Sendbird's: which notifications trigger an alert push, Do Not
/// Disturb (the legacy daily window and weekly schedules), snooze, the time zone they are read in,
/// and the alert sound.
///
/// Times of day are minutes: a window covers its start minute through its end minute, both included
/// (so a weekly window ending 23:59 reaches midnight, and Monday 22:00–23:59 plus Tuesday 00:00–07:00
/// is Monday 22:00 to Tuesday 07:00, as the seed's cross-midnight rule splits it).
public struct PushPreferences: Sendable, Equatable {
    /// The user's trigger option for every channel.
    public enum TriggerOption: String, Sendable, CaseIterable {
        case all
        case mentionOnly = "mention_only"
        case off
    }

    /// A channel's trigger option; `default` follows the user's.
    public enum ChannelTriggerOption: String, Sendable, CaseIterable {
        case `default`
        case all
        case mentionOnly = "mention_only"
        case off
    }

    /// A time of day, to the minute.
    public struct TimeOfDay: Sendable, Equatable, Comparable {
        public var hour: Int
        public var minute: Int

        public init(hour: Int, minute: Int) {
            self.hour = hour
            self.minute = minute
        }

        public var minuteOfDay: Int { hour * 60 + minute }
        public var isValid: Bool { (0...23).contains(hour) && (0...59).contains(minute) }

        public static func < (lhs: TimeOfDay, rhs: TimeOfDay) -> Bool { lhs.minuteOfDay < rhs.minuteOfDay }
    }

    /// A window of the day: the legacy daily window (which may wrap midnight, 22:00–07:00) or a
    /// weekly one (validated to lie within one day, start strictly before end).
    public struct TimeWindow: Sendable, Equatable {
        public var start: TimeOfDay
        public var end: TimeOfDay

        public init(start: TimeOfDay, end: TimeOfDay) {
            self.start = start
            self.end = end
        }

        public func covers(_ time: TimeOfDay) -> Bool {
            start <= end ? (start <= time && time <= end) : (time >= start || time <= end)
        }
    }

    public enum Weekday: String, Sendable, CaseIterable {
        case sunday, monday, tuesday, wednesday, thursday, friday, saturday

        /// Foundation's weekday number (1 = Sunday).
        init?(gregorian number: Int) {
            guard (1...7).contains(number) else { return nil }
            self = Self.allCases[number - 1]
        }
    }

    public struct DaySchedule: Sendable, Equatable {
        public var day: Weekday
        public var windows: [TimeWindow]

        public init(day: Weekday, windows: [TimeWindow]) {
            self.day = day
            self.windows = windows
        }
    }

    /// Snooze: no alerts from `start` until `end` (Unix milliseconds; end excluded).
    public struct Snooze: Sendable, Equatable {
        public var start: Int64
        public var end: Int64

        public init(start: Int64, end: Int64) {
            self.start = start
            self.end = end
        }
    }

    public var triggerOption: TriggerOption = .all
    /// The legacy daily Do Not Disturb window; `nil` when off. Weekly schedules, when there are any,
    /// take its place.
    public var doNotDisturb: TimeWindow?
    public var schedules: [DaySchedule] = []
    public var snooze: Snooze?
    /// An IANA time zone name; DND windows are read in it.
    public var timeZone: String = "UTC"
    public var sound: String?

    public init() {}

    public static let maximumSoundLength = 255
    public static let maximumWindowsPerDay = 10

    /// The first rule these preferences break, as `(field, message)`; `nil` when they are valid.
    public func problem() -> (field: String, message: String)? {
        if TimeZone(identifier: timeZone) == nil || timeZone.isEmpty {
            return ("timezone", "must be an IANA time zone such as Europe/Berlin")
        }
        if let window = doNotDisturb {
            if !window.start.isValid { return ("start_hour", "start_hour must be 0–23 and start_min 0–59") }
            if !window.end.isValid { return ("end_hour", "end_hour must be 0–23 and end_min 0–59") }
        }
        var seen: Set<Weekday> = []
        for (index, schedule) in schedules.enumerated() {
            if !seen.insert(schedule.day).inserted {
                return ("dnd_schedules[\(index)].day", "names a day given before; put all its windows in one entry")
            }
            if schedule.windows.count > Self.maximumWindowsPerDay {
                return ("dnd_schedules[\(index)].time_windows", "at most \(Self.maximumWindowsPerDay) windows per day")
            }
            for (number, window) in schedule.windows.enumerated() {
                let field = "dnd_schedules[\(index)].time_windows[\(number)]"
                if !window.start.isValid || !window.end.isValid {
                    return (field, "hours must be 0–23 and minutes 0–59")
                }
                if !(window.start < window.end) {
                    return (field, "must start strictly before it ends (split a window across midnight into two days)")
                }
            }
        }
        if let snooze, !(snooze.start < snooze.end) {
            return ("snooze_end_ts", "must be after snooze_start_ts")
        }
        if let sound, sound.isEmpty || sound.count > Self.maximumSoundLength {
            return ("push_sound", "must be 1–\(Self.maximumSoundLength) characters")
        }
        return nil
    }
}
