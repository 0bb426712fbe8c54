import Foundation
import HeraldCore
import Hummingbird
import Postgres

/// JSON text from the database (a `jsonb` column's output, always valid JSON), put into a response
/// as it is: parsing a notification's data only to print it again cost more than the rest of a sync.
///
/// It encodes as a placeholder string; `RawJSON.response` swaps each quoted placeholder for the text.
/// Placeholders carry a per-process random nonce, so no stored string can pose as one.
struct RawJSON: Encodable, Sendable {
    let slot: Int

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Self.prefix + String(slot))
    }

    static let prefix = "herald-raw-\(Hex.encode(SecureRandom.bytes(8)))-"

    /// A placeholder for `json`, whose text is kept in `texts` (one list per response).
    static func add(_ json: PostgresJSONB, to texts: inout [[UInt8]]) -> RawJSON {
        texts.append(json.utf8)
        return RawJSON(slot: texts.count - 1)
    }

    /// `value` as a JSON response, with every placeholder replaced by its text.
    static func response(_ value: some Encodable, texts: [[UInt8]], status: HTTPResponse.Status = .ok) throws -> Response {
        let encoded = Array(try JSONEncoder().encode(value))
        var body: [UInt8] = []
        if texts.isEmpty {
            body = encoded
        } else {
            body.reserveCapacity(encoded.count + texts.reduce(0) { $0 + $1.count })
            let marker = Array(("\"" + prefix).utf8)
            var index = 0
            while index < encoded.count {
                if encoded[index] == UInt8(ascii: "\""), encoded.count - index > marker.count,
                    encoded[index..<index + marker.count].elementsEqual(marker)
                {
                    var end = index + marker.count
                    var slot = 0
                    while end < encoded.count, let digit = encoded[end].asciiDigit {
                        slot = slot * 10 + digit
                        end += 1
                    }
                    if end < encoded.count, encoded[end] == UInt8(ascii: "\""), slot < texts.count {
                        body += texts[slot]
                        index = end + 1
                        continue
                    }
                }
                body.append(encoded[index])
                index += 1
            }
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}

extension UInt8 {
    fileprivate var asciiDigit: Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) ? Int(self - UInt8(ascii: "0")) : nil
    }
}
