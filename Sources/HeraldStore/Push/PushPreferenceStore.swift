import Foundation
import HeraldCore
import Postgres

/// Users' push preferences and their channels' trigger options.
public struct PushPreferenceStore: Sendable {
    public let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// The user's preferences (the defaults when never set).
    public func get(userKey: Int64) async throws -> PushPreferences {
        try await preferences(userKeys: [userKey])[userKey] ?? PushPreferences()
    }

    /// Preferences of several users (the defaults, in their time zone, for those who never set any);
    /// keys that name no user are left out.
    public func preferences(userKeys: [Int64]) async throws -> [Int64: PushPreferences] {
        var result: [Int64: PushPreferences] = [:]
        for row in try await client.query(
            "SELECT u.key, \(Self.columns) FROM users u LEFT JOIN push_preferences p ON p.user_key = u.key WHERE u.key = ANY(\(userKeys))"
        ) {
            var column = 1
            result[try row.decode(column: 0, as: Int64.self)] = try Self.decode(row, at: &column)
        }
        return result
    }

    /// The columns `decode` reads, of `push_preferences p` (all NULL for a user without a row) and
    /// `users u`, the time zone's one home.
    static let columns: PostgresQuery =
        "p.trigger_option, p.dnd_start, p.dnd_end, p.dnd_schedules, p.snooze_start, p.snooze_end, u.time_zone, p.sound"

    /// Preferences from `columns`, starting at `column`, which moves past them; the defaults (in the
    /// user's time zone) when the row was missing.
    static func decode(_ row: PostgresRow, at column: inout Int) throws -> PushPreferences {
        let offset = column
        column += 8
        var preferences = PushPreferences()
        preferences.timeZone = try row.decode(column: offset + 6, as: String.self)
        guard let trigger = try row.decode(column: offset, as: String?.self) else { return preferences }
        preferences.triggerOption = PushPreferences.TriggerOption(rawValue: trigger) ?? .all
        if let start = try row.decode(column: offset + 1, as: Int16?.self), let end = try row.decode(column: offset + 2, as: Int16?.self) {
            preferences.doNotDisturb = .init(start: time(Int(start)), end: time(Int(end)))
        }
        preferences.schedules = try decodeSchedules(try row.decode(column: offset + 3, as: PostgresJSONB.self))
        if let start = try row.decode(column: offset + 4, as: Int64?.self), let end = try row.decode(column: offset + 5, as: Int64?.self) {
            preferences.snooze = .init(start: start, end: end)
        }
        preferences.sound = try row.decode(column: offset + 7, as: String?.self)
        return preferences
    }

    /// Stores the user's preferences (validated by the caller), the time zone on the user.
    public func put(userKey: Int64, _ preferences: PushPreferences) async throws {
        try await client.transaction([
            """
            INSERT INTO push_preferences AS p (user_key, trigger_option, dnd_start, dnd_end, dnd_schedules, snooze_start, snooze_end, sound)
            VALUES (\(userKey), \(preferences.triggerOption.rawValue), \(preferences.doNotDisturb.map { Int16($0.start.minuteOfDay) }),
                \(preferences.doNotDisturb.map { Int16($0.end.minuteOfDay) }), \(try Self.encodeSchedules(preferences.schedules)),
                \(preferences.snooze?.start), \(preferences.snooze?.end), \(preferences.sound))
            ON CONFLICT (user_key) DO UPDATE SET trigger_option = EXCLUDED.trigger_option, dnd_start = EXCLUDED.dnd_start,
                dnd_end = EXCLUDED.dnd_end, dnd_schedules = EXCLUDED.dnd_schedules, snooze_start = EXCLUDED.snooze_start,
                snooze_end = EXCLUDED.snooze_end, sound = EXCLUDED.sound, updated_at = now()
            """,
            "UPDATE users SET time_zone = \(preferences.timeZone), updated_at = now() WHERE key = \(userKey) AND time_zone <> \(preferences.timeZone)",
        ])
    }

    /// Back to the defaults: the user's preferences and every channel option. The time zone is the
    /// user's, not a preference, and stays.
    public func reset(userKey: Int64) async throws {
        try await client.transaction([
            "DELETE FROM push_preferences WHERE user_key = \(userKey)",
            "DELETE FROM channel_push_preferences WHERE user_key = \(userKey)",
        ])
    }

    /// The channel's trigger option for the user (`default` when not set).
    public func channelOption(userKey: Int64, channelKey: Int64) async throws -> PushPreferences.ChannelTriggerOption {
        try await channelOptions(userKeys: [userKey], channelKey: channelKey)[userKey] ?? .default
    }

    /// The channel's trigger options of several users; `default` ones are left out.
    public func channelOptions(userKeys: [Int64], channelKey: Int64) async throws -> [Int64: PushPreferences.ChannelTriggerOption] {
        var result: [Int64: PushPreferences.ChannelTriggerOption] = [:]
        for row in try await client.query(
            "SELECT user_key, trigger_option FROM channel_push_preferences WHERE user_key = ANY(\(userKeys)) AND channel_key = \(channelKey)"
        ) {
            let (key, option) = try row.decode((Int64, String).self)
            result[key] = PushPreferences.ChannelTriggerOption(rawValue: option) ?? .default
        }
        return result
    }

    /// Sets the channel's option; `default` removes it.
    public func setChannelOption(userKey: Int64, channelKey: Int64, _ option: PushPreferences.ChannelTriggerOption) async throws {
        if option == .default {
            try await client.query("DELETE FROM channel_push_preferences WHERE user_key = \(userKey) AND channel_key = \(channelKey)")
        } else {
            try await client.query(
                """
                INSERT INTO channel_push_preferences (user_key, channel_key, trigger_option) VALUES (\(userKey), \(channelKey), \(option.rawValue))
                ON CONFLICT (user_key, channel_key) DO UPDATE SET trigger_option = EXCLUDED.trigger_option
                """
            )
        }
    }

    static func time(_ minuteOfDay: Int) -> PushPreferences.TimeOfDay {
        .init(hour: minuteOfDay / 60, minute: minuteOfDay % 60)
    }

    private struct StoredDay: Codable {
        var day: String
        var windows: [[Int]]
    }

    static func encodeSchedules(_ schedules: [PushPreferences.DaySchedule]) throws -> PostgresJSONB {
        let stored = schedules.map { StoredDay(day: $0.day.rawValue, windows: $0.windows.map { [$0.start.minuteOfDay, $0.end.minuteOfDay] }) }
        return try PostgresJSONB(utf8: Array(JSONEncoder().encode(stored)))
    }

    static func decodeSchedules(_ json: PostgresJSONB) throws -> [PushPreferences.DaySchedule] {
        try JSONDecoder().decode([StoredDay].self, from: Data(json.utf8)).compactMap { day in
            guard let weekday = PushPreferences.Weekday(rawValue: day.day) else { return nil }
            return .init(
                day: weekday,
                windows: day.windows.compactMap { pair in
                    pair.count == 2 ? .init(start: time(pair[0]), end: time(pair[1])) : nil
                }
            )
        }
    }
}
