import Foundation

extension HeraldAPI {
    /// What an archive takes: these notifications, every read one, or all.
    enum ArchiveTarget: Sendable {
        case ids([String])
        case read
        case all
    }

    /// The state after the archive, and its position.
    func archive(channelURL: String, _ target: ArchiveTarget) async throws -> (state: ChannelState, position: Int64?) {
        let body: Operations.ArchiveNotifications.Input.Body.JsonPayload
        switch target {
        case .ids(let ids): body = .init(notificationIds: ids)
        case .read: body = .init(scope: .read)
        case .all: body = .init(scope: .all)
        }
        let output = try await unwrapping {
            try await client.archiveNotifications(path: .init(channelUrl: channelURL), body: .json(body))
        }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return Self.marked(try ok.body.json)
    }

    /// The state after bringing archived notifications back, and its position.
    func unarchive(channelURL: String, ids: [String]) async throws -> (state: ChannelState, position: Int64?) {
        let output = try await unwrapping {
            try await client.unarchiveNotifications(path: .init(channelUrl: channelURL), body: .json(.init(notificationIds: ids)))
        }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return Self.marked(try ok.body.json)
    }

    /// The state after marking notifications unread, and its position.
    func markUnread(channelURL: String, ids: [String]) async throws -> (state: ChannelState, position: Int64?) {
        let output = try await unwrapping {
            try await client.markUnread(path: .init(channelUrl: channelURL), body: .json(.init(notificationIds: ids)))
        }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return Self.marked(try ok.body.json)
    }

    /// The state after deleting notifications from the user's collection, and its position.
    func delete(channelURL: String, ids: [String]) async throws -> (state: ChannelState, position: Int64?) {
        let output = try await unwrapping {
            try await client.deleteNotifications(path: .init(channelUrl: channelURL), body: .json(.init(notificationIds: ids)))
        }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return Self.marked(try ok.body.json)
    }
}

extension HeraldAPI {
    /// The state after pressing the notification's action, and its position.
    func press(action: String, notificationID: String) async throws -> (state: ChannelState, position: Int64?) {
        let output = try await unwrapping {
            try await client.pressAction(path: .init(notificationId: notificationID, actionId: action))
        }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return Self.marked(try ok.body.json)
    }
}
