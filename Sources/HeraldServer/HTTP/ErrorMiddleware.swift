import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import Postgres

/// Turns every error a handler throws into Herald's JSON error shape.
///
/// Known errors keep their status; anything unexpected is logged in full and answered as a bare 500,
/// so no internal detail (SQL, server messages, file paths) reaches the client.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = HeraldRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as HTTPError {
            throw APIError(error.status, code: Self.code(for: error.status), message: error.body ?? Self.message(for: error.status))
        } catch is NIOTooManyBytesError {
            throw RequestBody.tooLarge(context.maxUploadSize)
        } catch let error as HTTPParserError {
            // The body could not be read as HTTP/1.1 (a malformed chunk, a chunk longer than it said):
            // the client's fault, and the connection closes after the answer.
            throw ParseErrorResponder.apiError(for: error)
        } catch let error as PostgresError where error.sqlState?.hasPrefix("22") == true {
            // Class 22 is "data exception": a value from the request that the database cannot hold (a
            // NUL character in text, a number out of range). The statement failed, nothing was written.
            context.logger.info("request value refused by the database", metadata: ["error": context.logger.describe(error)])
            throw APIError(
                .badRequest,
                code: "invalid_value",
                message: "A value in the request cannot be stored (for example it contains a NUL character or is out of range)."
            )
        } catch let error as PostgresError where error.code == .queryCanceled {
            // The statement ran past the pool's statement timeout (or the request was abandoned).
            context.logger.error("database statement timed out", metadata: ["error": context.logger.describe(error)])
            throw APIError(
                .serviceUnavailable,
                code: "database_timeout",
                message: "The database did not answer in time; nothing was changed. Try again."
            )
        } catch let error as PostgresError where error.code == .connectionLost || error.code == .clientClosed {
            context.logger.error("database unavailable", metadata: ["error": context.logger.describe(error)])
            throw APIError.databaseUnavailable
        } catch {
            context.logger.error("unhandled error", metadata: ["error": context.logger.describe(error)])
            throw APIError.internalError
        }
    }

    static func code(for status: HTTPResponse.Status) -> String {
        switch status {
        case .badRequest: return "bad_request"
        case .unauthorized: return "unauthorized"
        case .forbidden: return "forbidden"
        case .notFound: return "not_found"
        case .methodNotAllowed: return "method_not_allowed"
        case .conflict: return "conflict"
        case .contentTooLarge: return "payload_too_large"
        case .unsupportedMediaType: return "unsupported_media_type"
        case .unprocessableContent: return "unprocessable_entity"
        case .tooManyRequests: return "too_many_requests"
        case .serviceUnavailable: return "service_unavailable"
        default: return status.code >= 500 ? "internal_error" : "http_\(status.code)"
        }
    }

    static func message(for status: HTTPResponse.Status) -> String {
        switch status {
        case .notFound: return "No route or resource matches this request."
        default: return status.reasonPhrase.isEmpty ? "HTTP \(status.code)" : status.reasonPhrase
        }
    }
}
