import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// Admin routes for notification templates.
struct TemplatesController: Sendable {
    let templates: TemplateStore

    func register(in routes: RouteRegistry) {
        routes.add(.put, "/v1/templates/{key}", access: .admin) { request, context in
            try await put(request, context: context)
        }
        routes.add(.get, "/v1/templates", access: .admin) { request, _ in
            let page = try PageRequest(request)
            let found = try await templates.list(after: page.after, limit: page.limit)
            return ListBody(templates: found.map(TemplateBody.init), next: found.count == page.limit ? found.last?.template.key : nil)
        }
        routes.add(.get, "/v1/templates/{key}", access: .admin) { request, context in
            let key = try Self.key(context)
            var version: Int?
            if let text = request.uri.queryParameters["version"] {
                guard let number = CanonicalInteger.id(text).map(Int.init) else {
                    throw APIError(.badRequest, code: "invalid_version", message: "version must be a positive integer.")
                }
                version = number
            }
            guard let stored = try await templates.get(key, version: version) else {
                throw APIError(.notFound, code: "template_not_found", message: "No template (or template version) with this key.")
            }
            return TemplateBody(stored)
        }
    }

    struct TemplateBody: ResponseEncodable {
        var stored: StoredTemplate
        var outcome: PutOutcome?

        init(_ stored: StoredTemplate) {
            self.stored = stored
        }

        func encode(to encoder: any Encoder) throws {
            try stored.template.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(stored.version, forKey: .version)
            try container.encode(RFC3339.string(from: stored.createdAt), forKey: .createdAt)
            try container.encodeIfPresent(outcome?.rawValue, forKey: .outcome)
        }

        enum Keys: String, CodingKey {
            case version, outcome
            case createdAt = "created_at"
        }
    }

    struct ListBody: ResponseEncodable {
        var templates: [TemplateBody]
        var next: String?
    }

    func put(_ request: Request, context: HeraldRequestContext) async throws -> EditedResponse<TemplateBody> {
        let key = try Self.key(context)
        guard var template = try await RequestBody.decode(Template.self, from: request, context: context) else {
            throw APIError(.badRequest, code: "invalid_template", message: "The body must define the template, at least its data.")
        }
        if template.key.isEmpty { template.key = key }
        guard template.key == key else {
            throw APIError(.badRequest, code: "invalid_template", message: "$.key must match the key in the path.")
        }
        do {
            try template.validate()
        } catch {
            throw APIError(.badRequest, code: "invalid_template", message: "\(error.path) \(error.message).")
        }
        let (stored, outcome) = try await templates.put(template)
        var body = TemplateBody(stored)
        body.outcome = outcome
        return EditedResponse(status: outcome == .created ? .created : .ok, response: body)
    }

    static func key(_ context: HeraldRequestContext) throws -> String {
        let key = try context.parameters.require("key")
        if let problem = Template.keyProblem(key) {
            throw APIError(.badRequest, code: "invalid_template_key", message: "key \(problem).")
        }
        return key
    }
}
