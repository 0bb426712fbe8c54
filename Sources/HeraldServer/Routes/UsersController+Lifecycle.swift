import Foundation
import HeraldCore
import HeraldServices
import HeraldStore
import Hummingbird
import Logging
import NIOCore
import Postgres

extension UsersController {
    /// An erasure as the admin API shows it.
    struct ErasureBody: ResponseEncodable {
        var userID: String
        var status: String
        var requestedAt: String
        var finishedAt: String?
        var removedRows: Int64

        init(_ erasure: UserErasure) {
            userID = erasure.userID
            status = erasure.state.rawValue
            requestedAt = RFC3339.string(from: erasure.requestedAt)
            finishedAt = erasure.finishedAt.map(RFC3339.string)
            removedRows = erasure.removedRows
        }

        enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case status
            case requestedAt = "requested_at"
            case finishedAt = "finished_at"
            case removedRows = "removed_rows"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(userID, forKey: .userID)
            try container.encode(status, forKey: .status)
            try container.encode(requestedAt, forKey: .requestedAt)
            try container.encode(finishedAt, forKey: .finishedAt)
            try container.encode(removedRows, forKey: .removedRows)
        }
    }

    /// `DELETE /v1/users/{user_id}`: starts the erasure (or answers the one under way) with `202` and
    /// where to follow it.
    func erase(context: HeraldRequestContext) async throws -> EditedResponse<ErasureBody> {
        let userID = try Self.userID(context)
        let erasure = try await startErasure(userID)
        var headers = HTTPFields()
        let path = userID.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? userID
        headers[.location] = "/v1/users/\(path)/erasure"
        return EditedResponse(status: .accepted, headers: headers, response: ErasureBody(erasure))
    }

    /// Starts (or finds running) the erasure of a valid user id, and wakes the service that does it.
    func startErasure(_ userID: String) async throws -> UserErasure {
        guard let erasure = try await erasures.start(userID: userID) else {
            throw APIError(.notFound, code: "user_not_found", message: "No user with this id.")
        }
        erasureWake.signal()
        return erasure
    }

    /// Rows per query of the export, and bytes gathered before they are sent.
    static let exportPageSize = 1000
    static let exportChunkBytes = 64 * 1024

    /// `GET /v1/users/{user_id}/export`: one JSON document, written as it is read, a page at a time.
    func export(context: HeraldRequestContext) async throws -> Response {
        let userID = try Self.userID(context)
        guard let (key, user) = try await exports.user(userID) else {
            throw APIError(.notFound, code: "user_not_found", message: "No user with this id.")
        }
        let exports = exports
        let logger = context.logger
        let body = ResponseBody { writer in
            var json = JSONWriter(capacity: Self.exportChunkBytes + 16 * 1024)
            json.beginObject()
            json.key("user")
            json.raw(user)
            json.key("exported_at")
            json.string(RFC3339.string(from: Date()))
            do {
                for section in UserExportStore.Section.allCases {
                    json.key(section.rawValue)
                    // A user has at most one row of push preferences: an object, or null for the defaults.
                    let single = section == .pushPreferences
                    if !single { json.beginArray() }
                    var cursor = UserExportStore.Cursor.start
                    var written = 0
                    while true {
                        let (objects, last) = try await exports.page(section, userKey: key, after: cursor, limit: Self.exportPageSize)
                        for object in objects { json.raw(object) }
                        written += objects.count
                        if json.bytes.count >= Self.exportChunkBytes { try await writer.write(json.takeBuffer()) }
                        guard let last, objects.count == Self.exportPageSize else { break }
                        cursor = last
                    }
                    if single, written == 0 { json.null() }
                    if !single { json.endArray() }
                }
            } catch {
                // The status line has gone out: all that is left is to cut the body short, which the
                // reader sees as JSON that does not parse.
                logger.error("user export failed", metadata: ["error": logger.describe(error)])
                throw error
            }
            json.endObject()
            try await writer.write(json.takeBuffer())
            try await writer.finish(nil)
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.contentDisposition] = "attachment; filename=\"herald-user-export.json\""
        return Response(status: .ok, headers: headers, body: body)
    }
}
