import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// `/v1/me/push-preferences` and the channel option over HTTP against a real database.
@Suite("Push preferences")
struct PushPreferencesTests {
    func seed(_ db: TestDatabase) async throws -> [String: String] {
        _ = try await ChannelStore(client: db.client).put(Channel(url: "chat", kind: .chat, name: "Chat"))
        var sessions: [String: String] = [:]
        for user in ["u1", "u2"] {
            _ = try await UserStore(client: db.client).upsert(id: user, nickname: nil, profileURL: nil)
            sessions[user] = try #require(try await SessionStore(client: db.client).create(userID: user, lifetime: 3600)).token.text
        }
        return sessions
    }

    func call(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ path: String,
        _ session: String?,
        _ body: String? = nil
    ) async throws -> TestResponse {
        try await client.execute(uri: path, method: method, headers: jsonHeaders(bearer: session), body: body.map { ByteBuffer(string: $0) })
    }

    @Test func preferencesAreSetValidatedAndReset() async throws {
        try await TestPostgres.withDatabase { (db: TestDatabase) async throws in
            let sessions = try await seed(db)
            try await heraldApplication(db, adminToken: nil).test(.router) { client in
                let path = "/v1/me/push-preferences"
                let defaults = try jsonObject(try await call(client, .get, path, sessions["u1"]))
                #expect(defaults["push_trigger_option"] as? String == "all")
                #expect(defaults["do_not_disturb"] as? Bool == false)
                #expect(defaults["timezone"] as? String == "UTC")
                #expect(defaults["push_sound"] is NSNull)

                // The legacy window (wrapping midnight), a zone, a sound, mention_only.
                let legacy = try await call(
                    client,
                    .put,
                    path,
                    sessions["u1"],
                    """
                    {"push_trigger_option":"mention_only","do_not_disturb":true,"start_hour":22,"start_min":30,"end_hour":7,"end_min":0,
                     "timezone":"Europe/Berlin","push_sound":"chime.caf"}
                    """
                )
                #expect(legacy.status == .ok)
                let set = try jsonObject(try await call(client, .get, path, sessions["u1"]))
                #expect(set["push_trigger_option"] as? String == "mention_only")
                #expect(set["do_not_disturb"] as? Bool == true)
                #expect([set["start_hour"], set["start_min"], set["end_hour"], set["end_min"]].map { $0 as? Int } == [22, 30, 7, 0])
                #expect(set["timezone"] as? String == "Europe/Berlin")
                #expect(set["push_sound"] as? String == "chime.caf")
                // Another user sees only their own.
                #expect(try jsonObject(try await call(client, .get, path, sessions["u2"]))["push_trigger_option"] as? String == "all")

                // Weekly schedules switch the legacy window off; setting it again while they exist is refused.
                let weekly = try await call(
                    client,
                    .put,
                    path,
                    sessions["u1"],
                    """
                    {"dnd_schedules":[{"day":"monday","time_windows":[{"start_hour":22,"start_min":0,"end_hour":23,"end_min":59}]},
                                      {"day":"tuesday","time_windows":[{"start_hour":0,"start_min":0,"end_hour":7,"end_min":0}]}]}
                    """
                )
                #expect(weekly.status == .ok)
                let afterWeekly = try jsonObject(weekly)
                #expect(afterWeekly["do_not_disturb"] as? Bool == false)
                #expect((afterWeekly["dnd_schedules"] as? [[String: Any]])?.map { $0["day"] as? String } == ["monday", "tuesday"])
                let stored = try await PushPreferenceStore(client: db.client).get(
                    userKey: try #require(try await UserStore(client: db.client).key("u1"))
                )
                #expect(stored.schedules.count == 2 && stored.doNotDisturb == nil && stored.triggerOption == .mentionOnly)
                let legacyAgain = try await call(
                    client,
                    .put,
                    path,
                    sessions["u1"],
                    #"{"do_not_disturb":true,"start_hour":1,"start_min":0,"end_hour":2,"end_min":0}"#
                )
                #expect(legacyAgain.status == .badRequest)

                // Snooze.
                let snooze = try jsonObject(
                    try await call(client, .put, path, sessions["u1"], #"{"snooze_enabled":true,"snooze_start_ts":1000,"snooze_end_ts":2000}"#)
                )
                #expect(snooze["snooze_enabled"] as? Bool == true && snooze["snooze_end_ts"] as? Int == 2000)

                // Every invalid input is a 400 naming its field, and changes nothing.
                for (body, field) in [
                    (#"{"timezone":"Mars/Olympus"}"#, "timezone"),
                    (
                        #"{"dnd_schedules":[{"day":"monday","time_windows":[{"start_hour":9,"start_min":0,"end_hour":8,"end_min":0}]}]}"#,
                        "dnd_schedules[0].time_windows[0]"
                    ),
                    (#"{"dnd_schedules":[{"day":"someday","time_windows":[]}]}"#, "dnd_schedules[0].day"),
                    (#"{"dnd_schedules":[],"do_not_disturb":true,"start_hour":24,"start_min":0,"end_hour":7,"end_min":0}"#, "start_hour"),
                    (#"{"dnd_schedules":[],"do_not_disturb":true,"start_hour":22,"start_min":0,"end_hour":7,"end_min":60}"#, "end_hour"),
                    (#"{"push_trigger_option":"sometimes"}"#, "push_trigger_option"),
                    (#"{"snooze_enabled":true,"snooze_start_ts":5000,"snooze_end_ts":4000}"#, "snooze_end_ts"),
                    (#"{"push_sound":""}"#, "push_sound"),
                    // A misspelt field is refused, not ignored, even beside valid ones.
                    (#"{"snooze_enabeld":true}"#, "$.snooze_enabeld is not a known field"),
                    (#"{"timezone":"UTC","Push_Sound":"a.caf"}"#, "$.Push_Sound"),
                    (#"{"dnd_schedules":[{"day":"monday","time_windows":[],"tz":"UTC"}]}"#, "$.dnd_schedules[0].tz"),
                ] {
                    let response = try await call(client, .put, path, sessions["u1"], body)
                    #expect(response.status == .badRequest, "\(body)")
                    #expect(try errorCode(response) == (field.hasPrefix("$") ? "unknown_field" : "invalid_push_preferences"))
                    let message = (try jsonObject(response)["error"] as? [String: Any])?["message"] as? String ?? ""
                    #expect(message.hasPrefix(field), "\(body): \(message)")
                }
                #expect(
                    try await PushPreferenceStore(client: db.client).get(
                        userKey: try #require(try await UserStore(client: db.client).key("u1"))
                    ).timeZone == "Europe/Berlin"
                )

                // The channel's option.
                let channelPath = "/v1/me/channels/chat/push-preferences"
                #expect(try jsonObject(try await call(client, .get, channelPath, sessions["u1"]))["push_trigger_option"] as? String == "default")
                #expect(try await call(client, .put, channelPath, sessions["u1"], #"{"push_trigger_option":"off"}"#).status == .ok)
                #expect(try jsonObject(try await call(client, .get, channelPath, sessions["u1"]))["push_trigger_option"] as? String == "off")
                #expect(try await call(client, .put, channelPath, sessions["u1"], #"{"push_trigger_option":"loud"}"#).status == .badRequest)
                #expect(
                    try await call(client, .put, "/v1/me/channels/nope/push-preferences", sessions["u1"], #"{"push_trigger_option":"off"}"#).status
                        == .notFound
                )

                // DELETE: all defaults again, the channel option too.
                let reset = try jsonObject(try await call(client, .delete, path, sessions["u1"]))
                #expect(reset["push_trigger_option"] as? String == "all" && reset["timezone"] as? String == "UTC")
                #expect((reset["dnd_schedules"] as? [Any])?.isEmpty == true)
                #expect(try jsonObject(try await call(client, .get, channelPath, sessions["u1"]))["push_trigger_option"] as? String == "default")
                #expect(try await call(client, .get, path, nil).status == .unauthorized)
            }
        }
    }
}
