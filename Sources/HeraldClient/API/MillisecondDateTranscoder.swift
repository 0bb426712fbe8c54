import Foundation
import HeraldWire
import OpenAPIRuntime

/// Herald's times (`RFC3339`, shared with the server): written to the millisecond — Foundation's
/// formatter truncates, so `.123` held in a `Double` as `.12299…` would go out as `.122` — and read
/// without a formatter per value in Herald's own shape.
struct MillisecondDateTranscoder: DateTranscoder {
    func encode(_ date: Date) throws -> String {
        RFC3339.string(from: date)
    }

    func decode(_ text: String) throws -> Date {
        guard let date = RFC3339.date(from: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "'\(text)' is not an RFC 3339 date-time"))
        }
        return date
    }
}
