import Foundation
import OpenAPIRuntime

extension HeraldAPI {
    /// One page of the user's topic subscriptions, and the cursor of the next (nil on the last).
    func topics(after: String?) async throws -> (topics: [HeraldTopic], next: String?) {
        let output = try await unwrapping { try await client.listMyTopics(query: .init(limit: 200, after: after)) }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        let page = try ok.body.json
        return (page.topics.map(HeraldTopic.init), page.next)
    }

    /// Follows the topic or, with `muted`, mutes or unmutes a subscription the user has.
    func follow(topic: String, muted: Bool?) async throws -> HeraldTopic {
        let output = try await unwrapping {
            try await client.followTopic(path: .init(topicId: topic), body: muted.map { .json(.init(muted: $0)) })
        }
        switch output {
        case .ok(let ok): return HeraldTopic(try ok.body.json)
        case .created(let created): return HeraldTopic(try created.body.json)
        default: throw HeraldClientError.unexpected(output)
        }
    }

    func unfollow(topic: String) async throws {
        let output = try await unwrapping { try await client.unfollowTopic(path: .init(topicId: topic)) }
        guard case .noContent = output else { throw HeraldClientError.unexpected(output) }
    }
}
