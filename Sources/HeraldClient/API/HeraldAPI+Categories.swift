import Foundation
import OpenAPIRuntime

extension HeraldAPI {
    func categoryPreferences(channelURL: String) async throws -> [CategoryPreference] {
        let output = try await unwrapping { try await client.getCategoryPreferences(path: .init(channelUrl: channelURL)) }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return try ok.body.json.categories.map(CategoryPreference.init)
    }

    func setCategoryPreference(channelURL: String, category: String, inbox: Bool?, push: Bool?) async throws -> CategoryPreference {
        let output = try await unwrapping {
            try await client.setCategoryPreference(
                path: .init(channelUrl: channelURL, category: category),
                body: .json(.init(inbox: inbox, push: push))
            )
        }
        guard case .ok(let ok) = output else { throw HeraldClientError.unexpected(output) }
        return CategoryPreference(try ok.body.json)
    }
}
