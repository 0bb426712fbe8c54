import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// `/v1/me/push-preferences` and `/v1/me/channels/{channel_url}/push-preferences`: what decides the
/// user's alert pushes (`AlertDecision`). Field names follow Sendbird's push preferences.
struct PushPreferencesController: Sendable {
    let preferences: PushPreferenceStore
    let collections: CollectionStore

    func register(in routes: RouteRegistry) {
        routes.add(.get, "/v1/me/push-preferences", access: .user) { _, context in
            PreferencesBody(try await preferences.get(userKey: try CollectionController.user(context).key))
        }
        routes.add(.put, "/v1/me/push-preferences", access: .user) { request, context in
            let user = try CollectionController.user(context)
            guard let body = try await RequestBody.decode(PreferencesBody.self, from: request, context: context) else {
                throw Self.invalid("body", "must be a JSON object of the preferences to change")
            }
            let updated = try body.applied(to: try await preferences.get(userKey: user.key))
            try await preferences.put(userKey: user.key, updated)
            return PreferencesBody(updated)
        }
        routes.add(.delete, "/v1/me/push-preferences", access: .user) { _, context in
            let user = try CollectionController.user(context)
            try await preferences.reset(userKey: user.key)
            return PreferencesBody(PushPreferences())
        }
        routes.add(.get, "/v1/me/channels/{channel_url}/push-preferences", parse: CollectionController.ChannelInput.init) {
            _,
            context,
            input,
            answer in
            let user = try CollectionController.user(context)
            let channel = try await CollectionController.channel(input, answer: answer, collections)
            return ChannelBody(pushTriggerOption: try await preferences.channelOption(userKey: user.key, channelKey: channel.key).rawValue)
        }
        routes.add(.put, "/v1/me/channels/{channel_url}/push-preferences", parse: CollectionController.ChannelInput.init) {
            request,
            context,
            input,
            answer in
            let user = try CollectionController.user(context)
            let channel = try await CollectionController.channel(input, answer: answer, collections)
            guard let body = try await RequestBody.decode(ChannelBody.self, from: request, context: context),
                let option = PushPreferences.ChannelTriggerOption(rawValue: body.pushTriggerOption)
            else {
                throw Self.invalid("push_trigger_option", "must be default, all, mention_only or off")
            }
            try await preferences.setChannelOption(userKey: user.key, channelKey: channel.key, option)
            return ChannelBody(pushTriggerOption: option.rawValue)
        }
    }

    static func invalid(_ field: String, _ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_push_preferences", message: "\(field) \(message).")
    }

    struct ChannelBody: ResponseEncodable, Decodable {
        var pushTriggerOption: String

        enum CodingKeys: String, CodingKey {
            case pushTriggerOption = "push_trigger_option"
        }
    }

    /// The preferences as the API reads and writes them. On `PUT` every field is optional: the ones
    /// given change, the others stay.
    struct PreferencesBody: ResponseEncodable, Decodable {
        struct Window: Codable {
            var startHour: Int
            var startMin: Int
            var endHour: Int
            var endMin: Int

            enum CodingKeys: String, CodingKey {
                case startHour = "start_hour"
                case startMin = "start_min"
                case endHour = "end_hour"
                case endMin = "end_min"
            }
        }

        struct Day: Codable {
            var day: String
            var timeWindows: [Window]

            enum CodingKeys: String, CodingKey {
                case day
                case timeWindows = "time_windows"
            }
        }

        var pushTriggerOption: String?
        var doNotDisturb: Bool?
        var startHour: Int?
        var startMin: Int?
        var endHour: Int?
        var endMin: Int?
        var dndSchedules: [Day]?
        var snoozeEnabled: Bool?
        var snoozeStartTs: Int64?
        var snoozeEndTs: Int64?
        var timezone: String?
        var pushSound: String?
        /// `push_sound` was in the body (`null` clears it).
        var setsSound = false

        enum CodingKeys: String, CodingKey {
            case pushTriggerOption = "push_trigger_option"
            case doNotDisturb = "do_not_disturb"
            case startHour = "start_hour"
            case startMin = "start_min"
            case endHour = "end_hour"
            case endMin = "end_min"
            case dndSchedules = "dnd_schedules"
            case snoozeEnabled = "snooze_enabled"
            case snoozeStartTs = "snooze_start_ts"
            case snoozeEndTs = "snooze_end_ts"
            case timezone
            case pushSound = "push_sound"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            pushTriggerOption = try container.decodeIfPresent(String.self, forKey: .pushTriggerOption)
            doNotDisturb = try container.decodeIfPresent(Bool.self, forKey: .doNotDisturb)
            startHour = try container.decodeIfPresent(Int.self, forKey: .startHour)
            startMin = try container.decodeIfPresent(Int.self, forKey: .startMin)
            endHour = try container.decodeIfPresent(Int.self, forKey: .endHour)
            endMin = try container.decodeIfPresent(Int.self, forKey: .endMin)
            dndSchedules = try container.decodeIfPresent([Day].self, forKey: .dndSchedules)
            snoozeEnabled = try container.decodeIfPresent(Bool.self, forKey: .snoozeEnabled)
            snoozeStartTs = try container.decodeIfPresent(Int64.self, forKey: .snoozeStartTs)
            snoozeEndTs = try container.decodeIfPresent(Int64.self, forKey: .snoozeEndTs)
            timezone = try container.decodeIfPresent(String.self, forKey: .timezone)
            pushSound = try container.decodeIfPresent(String.self, forKey: .pushSound)
            setsSound = container.contains(.pushSound)
        }

        init(_ preferences: PushPreferences) {
            pushTriggerOption = preferences.triggerOption.rawValue
            doNotDisturb = preferences.doNotDisturb != nil
            let window = preferences.doNotDisturb
            startHour = window?.start.hour ?? 0
            startMin = window?.start.minute ?? 0
            endHour = window?.end.hour ?? 0
            endMin = window?.end.minute ?? 0
            dndSchedules = preferences.schedules.map { schedule in
                Day(
                    day: schedule.day.rawValue,
                    timeWindows: schedule.windows.map {
                        Window(startHour: $0.start.hour, startMin: $0.start.minute, endHour: $0.end.hour, endMin: $0.end.minute)
                    }
                )
            }
            snoozeEnabled = preferences.snooze != nil
            snoozeStartTs = preferences.snooze?.start ?? 0
            snoozeEndTs = preferences.snooze?.end ?? 0
            timezone = preferences.timeZone
            pushSound = preferences.sound
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(pushTriggerOption, forKey: .pushTriggerOption)
            try container.encode(doNotDisturb, forKey: .doNotDisturb)
            try container.encode(startHour, forKey: .startHour)
            try container.encode(startMin, forKey: .startMin)
            try container.encode(endHour, forKey: .endHour)
            try container.encode(endMin, forKey: .endMin)
            try container.encode(dndSchedules, forKey: .dndSchedules)
            try container.encode(snoozeEnabled, forKey: .snoozeEnabled)
            try container.encode(snoozeStartTs, forKey: .snoozeStartTs)
            try container.encode(snoozeEndTs, forKey: .snoozeEndTs)
            try container.encode(timezone, forKey: .timezone)
            try container.encode(pushSound, forKey: .pushSound)  // null when none: the default sound
        }

        /// `stored` with this body's changes, validated; a 400 naming the field otherwise.
        func applied(to stored: PushPreferences) throws -> PushPreferences {
            var preferences = stored
            if let text = pushTriggerOption {
                guard let option = PushPreferences.TriggerOption(rawValue: text) else {
                    throw invalid("push_trigger_option", "must be all, mention_only or off")
                }
                preferences.triggerOption = option
            }
            if let days = dndSchedules {
                preferences.schedules = try days.enumerated().map { index, day in
                    guard let weekday = PushPreferences.Weekday(rawValue: day.day) else {
                        throw invalid("dnd_schedules[\(index)].day", "must be a day of the week in lower case, such as monday")
                    }
                    return .init(
                        day: weekday,
                        windows: day.timeWindows.map {
                            .init(start: .init(hour: $0.startHour, minute: $0.startMin), end: .init(hour: $0.endHour, minute: $0.endMin))
                        }
                    )
                }
                // Weekly schedules replace the legacy window.
                if !preferences.schedules.isEmpty { preferences.doNotDisturb = nil }
            }
            let windowFields = [startHour, startMin, endHour, endMin]
            if doNotDisturb == true {
                guard !windowFields.contains(where: { $0 == nil }) || preferences.doNotDisturb != nil else {
                    throw invalid("start_hour", "start_hour, start_min, end_hour and end_min are needed with do_not_disturb")
                }
                guard preferences.schedules.isEmpty else {
                    throw invalid(
                        "do_not_disturb",
                        "cannot be set while weekly dnd_schedules exist (they replace it); clear them with \"dnd_schedules\": [] first"
                    )
                }
                let current = preferences.doNotDisturb
                preferences.doNotDisturb = .init(
                    start: .init(hour: startHour ?? current!.start.hour, minute: startMin ?? current!.start.minute),
                    end: .init(hour: endHour ?? current!.end.hour, minute: endMin ?? current!.end.minute)
                )
            } else if doNotDisturb == false {
                preferences.doNotDisturb = nil
            } else if windowFields.contains(where: { $0 != nil }) {
                guard let current = preferences.doNotDisturb else {
                    throw invalid("do_not_disturb", "must be true to set the daily window")
                }
                preferences.doNotDisturb = .init(
                    start: .init(hour: startHour ?? current.start.hour, minute: startMin ?? current.start.minute),
                    end: .init(hour: endHour ?? current.end.hour, minute: endMin ?? current.end.minute)
                )
            }
            if snoozeEnabled == true {
                guard let start = snoozeStartTs ?? preferences.snooze?.start, let end = snoozeEndTs ?? preferences.snooze?.end else {
                    throw invalid("snooze_start_ts", "snooze_start_ts and snooze_end_ts (Unix milliseconds) are needed with snooze_enabled")
                }
                preferences.snooze = .init(start: start, end: end)
            } else if snoozeEnabled == false {
                preferences.snooze = nil
            }
            if let timezone { preferences.timeZone = timezone }
            if setsSound { preferences.sound = pushSound }
            if let (field, message) = preferences.problem() { throw invalid(field, message) }
            return preferences
        }

        private func invalid(_ field: String, _ message: String) -> APIError {
            PushPreferencesController.invalid(field, message)
        }
    }
}
