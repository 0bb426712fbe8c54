import HTTPTypes
import HeraldStore
import Hummingbird

/// How a request names the caller's own device: the `Herald-Device` header, or `?device=` where a
/// client cannot set headers (a browser's WebSocket). Syncs, the channel list and the live stream all
/// take both, with a device id or its APNs token.
///
/// A name that is malformed is a 400 and one that is not the caller's device a 404: ignoring it would
/// leave a client with a typo never acknowledging a refresh push, and so never pushed again.
enum DeviceNaming {
    static let header = HTTPField.Name("Herald-Device")!

    /// The device the request names, `nil` when it names none.
    static func reference(header: String?, query: String?) throws -> DeviceReference? {
        if let header, let query, header.lowercased() != query.lowercased() {
            throw APIError(.badRequest, code: "invalid_device", message: "Herald-Device and ?device= name different devices; name it once.")
        }
        guard let text = header ?? query else { return nil }
        guard let reference = DeviceReference(text) else {
            throw APIError(.badRequest, code: "invalid_device", message: "The device must be named by \(DeviceReference.formatDescription).")
        }
        return reference
    }

    static func reference(in request: Request) throws -> DeviceReference? {
        try reference(header: request.headers[header], query: request.uri.queryParameters["device"].map(String.init))
    }

    static let notFound = APIError(.notFound, code: "device_not_found", message: "This user has no device with this token or id; register it first.")
}
