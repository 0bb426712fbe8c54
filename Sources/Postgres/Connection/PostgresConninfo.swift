import CLibPQ
import Foundation

/// Helpers for libpq connection strings.
public enum PostgresConninfo {
    /// Returns `conninfo` (URI or `key=value` form) with its database replaced by `database`, in
    /// `key=value` form. Parsing only: nothing connects.
    public static func settingDatabase(_ database: String, in conninfo: String) throws -> String {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            let message = errorMessage.map { String(cString: $0) } ?? "invalid connection string"
            if let errorMessage { PQfreemem(errorMessage) }
            throw PostgresError(code: .other, serverMessage: message.trimmingTrailingNewlines())
        }
        defer { PQconninfoFree(options) }
        var pairs: [(String, String)] = []
        var option = options
        while let keyword = option.pointee.keyword {
            let key = String(cString: keyword)
            if key != "dbname", let value = option.pointee.val {
                pairs.append((key, String(cString: value)))
            }
            option += 1
        }
        pairs.append(("dbname", database))
        return pairs.map { "\($0.0)='\(quote($0.1))'" }.joined(separator: " ")
    }

    private static func quote(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
    }
}
