import Foundation
import Hummingbird

/// Reading JSON request bodies with Herald's limits and error shape.
enum RequestBody {
    /// Decodes the body as `T`; `nil` for an empty body (routes whose body is optional).
    /// A body over `limit` (default: the context's) is a 413; malformed JSON a 400 naming what is wrong.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, context: HeraldRequestContext, limit: Int? = nil) async throws -> T? {
        let buffer = try await request.body.collect(upTo: limit ?? context.maxUploadSize)
        if buffer.readableBytes == 0 { return nil }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError(.badRequest, code: "invalid_json", message: Self.describe(error))
        } catch let error as APIError {
            // A body type's own check while decoding (such as an unknown field) already says what is wrong.
            throw error
        } catch {
            throw APIError(.badRequest, code: "invalid_json", message: "The request body is not valid JSON.")
        }
    }

    /// A message that names the JSON path and the problem, without echoing the input.
    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.isEmpty ? "the body" : JSONPath.string(codingPath)
        }
        switch error {
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)) must be \(jsonKind(type))."
        case .valueNotFound(_, let context):
            return "\(path(context.codingPath)) must not be null."
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is required."
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "The request body is not valid JSON." : "\(path(context.codingPath)) is invalid."
        @unknown default:
            return "The request body is not valid JSON."
        }
    }

    /// What a client must send for a Swift type, in JSON's words (not Swift's `Dictionary<String, Any>`).
    static func jsonKind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is any BinaryInteger.Type: return "an integer"
        case is any BinaryFloatingPoint.Type: return "a number"
        default:
            let name = String(describing: type)
            if name.hasPrefix("Dictionary") { return "an object" }
            if name.hasPrefix("Array") { return "an array" }
            return "a value of another type"
        }
    }
}
