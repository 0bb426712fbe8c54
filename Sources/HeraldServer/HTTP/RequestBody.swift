import Foundation
import HeraldCore
import Hummingbird
import NIOCore

/// Reading JSON request bodies with Herald's limits and error shape.
enum RequestBody {
    /// Decodes the body as `T`; `nil` for an empty body (routes whose body is optional — only a body of
    /// no bytes at all means "none").
    ///
    /// A body over `limit` (default: the context's) is a 413, answered from `Content-Length` before any
    /// of it is read when the client declares it. A body that is not strictly valid JSON (RFC 8259: no
    /// trailing commas, no leading zeros, valid UTF-8, no raw control characters), even in a field the
    /// route ignores, is a 400; so is a field `T` does not know (`unknown_field`, naming it), and a value
    /// of the wrong type (naming its path).
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, context: HeraldRequestContext, limit: Int? = nil) async throws -> T? {
        let limit = limit ?? context.maxUploadSize
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit {
            throw tooLarge(limit)
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw tooLarge(limit)
        }
        if buffer.readableBytes == 0 { return nil }
        return try decode(type, from: Data(buffer.readableBytesView))
    }

    /// The same rules for a whole body already in memory.
    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        guard let tree = StrictJSON.parse(data) else {
            throw APIError(.badRequest, code: "invalid_json", message: "The request body is not valid JSON.")
        }
        let value: T
        do {
            value = try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            throw APIError(.badRequest, code: "invalid_json", message: Self.describe(error))
        } catch let error as APIError {
            // A body type's own check while decoding already says what is wrong.
            throw error
        } catch {
            throw APIError(.badRequest, code: "invalid_json", message: "The request body is not valid JSON.")
        }
        if let unknown = UnknownFields.first(in: tree, decoding: T.self) {
            throw unknownField(unknown)
        }
        return value
    }

    static func unknownField(_ unknown: (path: String, known: [String])) -> APIError {
        let known = unknown.known.isEmpty ? "it takes no fields" : "its fields are \(unknown.known.joined(separator: ", "))"
        return APIError(.badRequest, code: "unknown_field", message: "\(unknown.path) is not a known field; \(known).")
    }

    static func tooLarge(_ limit: Int) -> APIError {
        APIError(.contentTooLarge, code: "payload_too_large", message: "The request body is larger than \(limit) bytes.")
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
