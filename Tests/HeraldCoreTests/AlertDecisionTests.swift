import Foundation
import HeraldCore
import Testing

/// The alert-push decision as a table: preferences, channel option, mention, force, instant → verdict.
@Suite struct AlertDecisionTests {
    typealias P = PushPreferences

    static func time(_ hour: Int, _ minute: Int) -> P.TimeOfDay { .init(hour: hour, minute: minute) }

    /// An instant given as local wall-clock time in `zone` (ISO 8601 with offset is spelled out by the caller).
    static func instant(_ text: String) -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)!
    }

    static func preferences(
        trigger: P.TriggerOption = .all,
        daily: (P.TimeOfDay, P.TimeOfDay)? = nil,
        weekly: [P.DaySchedule] = [],
        snooze: (String, String)? = nil,
        zone: String = "UTC"
    ) -> P {
        var preferences = P()
        preferences.triggerOption = trigger
        preferences.doNotDisturb = daily.map { P.TimeWindow(start: $0.0, end: $0.1) }
        preferences.schedules = weekly
        preferences.snooze = snooze.map {
            P.Snooze(start: Int64(instant($0.0).timeIntervalSince1970 * 1000), end: Int64(instant($0.1).timeIntervalSince1970 * 1000))
        }
        preferences.timeZone = zone
        return preferences
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var preferences: P
        var channel: P.ChannelTriggerOption = .default
        var mentioned = false
        var forced = false
        var at: String
        var expected: AlertDecision
        var testDescription: String { name }
    }

    // 2026-11-23 is a Monday.
    static let cases: [Case] = [
        // Order: snooze beats weekly beats legacy; weekly schedules switch the legacy window off.
        Case(name: "no preferences: push", preferences: preferences(), at: "2026-11-23T12:00:00Z", expected: .send(forced: false)),
        Case(
            name: "snooze beats everything after it",
            preferences: preferences(
                daily: (time(0, 0), time(23, 59)),
                weekly: [.init(day: .monday, windows: [.init(start: time(0, 0), end: time(23, 59))])],
                snooze: ("2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z")
            ),
            at: "2026-11-23T12:00:00Z",
            expected: .suppressed(.snoozed)
        ),
        Case(
            name: "snooze ended: its end is excluded",
            preferences: preferences(snooze: ("2026-11-23T00:00:00Z", "2026-11-23T12:00:00Z")),
            at: "2026-11-23T12:00:00Z",
            expected: .send(forced: false)
        ),
        Case(
            name: "weekly beats legacy",
            preferences: preferences(
                daily: (time(11, 0), time(13, 0)),
                weekly: [.init(day: .monday, windows: [.init(start: time(11, 0), end: time(13, 0))])]
            ),
            at: "2026-11-23T12:00:00Z",
            expected: .suppressed(.weeklyDoNotDisturb)
        ),
        Case(
            name: "weekly schedules disable the legacy window",
            preferences: preferences(
                daily: (time(11, 0), time(13, 0)),
                weekly: [.init(day: .tuesday, windows: [.init(start: time(11, 0), end: time(13, 0))])]
            ),
            at: "2026-11-23T12:00:00Z",
            expected: .send(forced: false)
        ),
        Case(
            name: "legacy window",
            preferences: preferences(daily: (time(11, 0), time(13, 0))),
            at: "2026-11-23T12:00:00Z",
            expected: .suppressed(.doNotDisturb)
        ),
        // Windows at the edges of the day; a legacy window across midnight.
        Case(
            name: "weekly window from 00:00 covers midnight",
            preferences: preferences(weekly: [.init(day: .monday, windows: [.init(start: time(0, 0), end: time(7, 0))])]),
            at: "2026-11-23T00:00:00Z",
            expected: .suppressed(.weeklyDoNotDisturb)
        ),
        Case(
            name: "weekly window to 23:59 covers the last second",
            preferences: preferences(weekly: [.init(day: .monday, windows: [.init(start: time(22, 0), end: time(23, 59))])]),
            at: "2026-11-23T23:59:59Z",
            expected: .suppressed(.weeklyDoNotDisturb)
        ),
        Case(
            name: "Monday's window does not reach Tuesday 00:00",
            preferences: preferences(weekly: [.init(day: .monday, windows: [.init(start: time(22, 0), end: time(23, 59))])]),
            at: "2026-11-24T00:00:00Z",
            expected: .send(forced: false)
        ),
        Case(
            name: "the split cross-midnight pair covers Tuesday 00:00",
            preferences: preferences(weekly: [
                .init(day: .monday, windows: [.init(start: time(22, 0), end: time(23, 59))]),
                .init(day: .tuesday, windows: [.init(start: time(0, 0), end: time(7, 0))]),
            ]),
            at: "2026-11-24T00:00:00Z",
            expected: .suppressed(.weeklyDoNotDisturb)
        ),
        Case(
            name: "legacy window wrapping midnight, before it",
            preferences: preferences(daily: (time(22, 0), time(7, 0))),
            at: "2026-11-23T21:59:00Z",
            expected: .send(forced: false)
        ),
        Case(
            name: "legacy window wrapping midnight, at 23:59",
            preferences: preferences(daily: (time(22, 0), time(7, 0))),
            at: "2026-11-23T23:59:00Z",
            expected: .suppressed(.doNotDisturb)
        ),
        Case(
            name: "legacy window wrapping midnight, at 00:00",
            preferences: preferences(daily: (time(22, 0), time(7, 0))),
            at: "2026-11-24T00:00:00Z",
            expected: .suppressed(.doNotDisturb)
        ),
        Case(
            name: "legacy window wrapping midnight, after its end minute",
            preferences: preferences(daily: (time(22, 0), time(7, 0))),
            at: "2026-11-24T07:01:00Z",
            expected: .send(forced: false)
        ),
        // The user's time zone, across a DST switch (America/New_York springs forward 2026-03-08 02:00 → 03:00).
        Case(
            name: "DST day: 01:59 EST is inside 01:30–02:30",
            preferences: preferences(daily: (time(1, 30), time(2, 30)), zone: "America/New_York"),
            at: "2026-03-08T06:59:00Z",
            expected: .suppressed(.doNotDisturb)
        ),
        Case(
            name: "DST day: one minute later it is 03:00 EDT, outside",
            preferences: preferences(daily: (time(1, 30), time(2, 30)), zone: "America/New_York"),
            at: "2026-03-08T07:00:00Z",
            expected: .send(forced: false)
        ),
        Case(
            name: "DST day: a weekly Sunday window in local time",
            preferences: preferences(
                weekly: [.init(day: .sunday, windows: [.init(start: time(3, 0), end: time(4, 0))])],
                zone: "America/New_York"
            ),
            at: "2026-03-08T07:30:00Z",
            expected: .suppressed(.weeklyDoNotDisturb)
        ),
        Case(
            name: "the weekday is the local one (Monday 01:00 in Tokyo is Sunday in UTC)",
            preferences: preferences(
                weekly: [.init(day: .monday, windows: [.init(start: time(0, 30), end: time(1, 30))])],
                zone: "Asia/Tokyo"
            ),
            at: "2026-11-22T16:00:00Z",
            expected: .suppressed(.weeklyDoNotDisturb)
        ),
        // Trigger options, and the channel's overriding the user's.
        Case(
            name: "mention_only without a mention",
            preferences: preferences(trigger: .mentionOnly),
            at: "2026-11-23T12:00:00Z",
            expected: .suppressed(.notMentioned)
        ),
        Case(
            name: "mention_only with a mention",
            preferences: preferences(trigger: .mentionOnly),
            mentioned: true,
            at: "2026-11-23T12:00:00Z",
            expected: .send(forced: false)
        ),
        Case(
            name: "user off",
            preferences: preferences(trigger: .off),
            mentioned: true,
            at: "2026-11-23T12:00:00Z",
            expected: .suppressed(.triggerOff)
        ),
        Case(
            name: "channel all overrides user off",
            preferences: preferences(trigger: .off),
            channel: .all,
            at: "2026-11-23T12:00:00Z",
            expected: .send(forced: false)
        ),
        Case(
            name: "channel off overrides user all",
            preferences: preferences(),
            channel: .off,
            mentioned: true,
            at: "2026-11-23T12:00:00Z",
            expected: .suppressed(.triggerOff)
        ),
        Case(
            name: "channel mention_only overrides user all",
            preferences: preferences(),
            channel: .mentionOnly,
            at: "2026-11-23T12:00:00Z",
            expected: .suppressed(.notMentioned)
        ),
        Case(
            name: "channel default follows the user",
            preferences: preferences(trigger: .mentionOnly),
            channel: .default,
            mentioned: true,
            at: "2026-11-23T12:00:00Z",
            expected: .send(forced: false)
        ),
        // Forced past everything.
        Case(
            name: "force_push past snooze, DND and off",
            preferences: preferences(
                trigger: .off,
                daily: (time(0, 0), time(23, 59)),
                snooze: ("2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z")
            ),
            channel: .off,
            forced: true,
            at: "2026-11-23T12:00:00Z",
            expected: .send(forced: true)
        ),
    ]

    @Test(arguments: cases)
    func decision(_ item: Case) {
        let decision = AlertDecision.decide(
            preferences: item.preferences,
            channelOption: item.channel,
            mentioned: item.mentioned,
            forced: item.forced,
            at: Self.instant(item.at)
        )
        #expect(decision == item.expected)
    }

    @Test func invalidPreferencesNameTheirField() {
        var zone = P()
        zone.timeZone = "Mars/Olympus"
        #expect(zone.problem()?.field == "timezone")
        var hours = P()
        hours.doNotDisturb = .init(start: Self.time(24, 0), end: Self.time(7, 0))
        #expect(hours.problem()?.field == "start_hour")
        var backwards = P()
        backwards.schedules = [.init(day: .monday, windows: [.init(start: Self.time(9, 0), end: Self.time(8, 0))])]
        #expect(backwards.problem()?.field == "dnd_schedules[0].time_windows[0]")
        var equal = P()
        equal.schedules = [.init(day: .monday, windows: [.init(start: Self.time(9, 0), end: Self.time(9, 0))])]
        #expect(equal.problem() != nil)
        var snooze = P()
        snooze.snooze = .init(start: 10, end: 5)
        #expect(snooze.problem()?.field == "snooze_end_ts")
        #expect(P().problem() == nil)
    }

    @Test func aCategoryTurnedOffSuppressesAllButAForcedPush() {
        let preferences = PushPreferences()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(
            AlertDecision.decide(preferences: preferences, channelOption: .all, mentioned: false, forced: false, categoryPush: false, at: now)
                == .suppressed(.categoryOff)
        )
        #expect(
            AlertDecision.decide(preferences: preferences, channelOption: .all, mentioned: false, forced: true, categoryPush: false, at: now)
                == .send(forced: true)
        )
        #expect(
            AlertDecision.decide(preferences: preferences, channelOption: .all, mentioned: false, forced: false, categoryPush: true, at: now)
                == .send(forced: false)
        )
    }

    /// A throttle holds back only an alert that would go out: a forced one goes, and one the user's
    /// preferences suppress says why they did.
    @Test func aThrottleHoldsBackOnlyAnAlertThatWouldGo() {
        var preferences = PushPreferences()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func decide(_ forced: Bool = false, option: PushPreferences.ChannelTriggerOption = .all) -> AlertDecision {
            AlertDecision.decide(preferences: preferences, channelOption: option, mentioned: false, forced: forced, throttled: true, at: now)
        }
        #expect(decide() == .suppressed(.throttled))
        #expect(decide(true) == .send(forced: true))
        #expect(decide(option: .off) == .suppressed(.triggerOff))
        #expect(decide(option: .mentionOnly) == .suppressed(.notMentioned))
        preferences.snooze = .init(start: 0, end: Int64.max)
        #expect(decide() == .suppressed(.snoozed))
    }
}
