import Foundation
import HeraldCore
import Hummingbird
import NIOCore

/// The web client's modules (`web/*.js`) and its demo page (`web/*.html`), read once at start: what
/// `GET /client/{file}` serves, so that a page can import the client straight from Herald
/// (`import … from "https://herald…/client/herald.js"`).
public struct ClientFiles: Sendable {
    struct File: Sendable {
        var body: ByteBuffer
        var contentType: String
        /// A strong validator: the first 16 bytes of the body's SHA-256, quoted.
        var etag: String
    }

    let files: [String: File]

    /// The files directly in `directory` that a page loads (a module's siblings are the other modules
    /// it imports): `.js` and `.html`; nothing else (the package's files, the tests, the types).
    public static func load(directory: String) throws -> ClientFiles {
        let types = ["js": "text/javascript; charset=utf-8", "html": "text/html; charset=utf-8"]
        var files: [String: File] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            guard let type = types[(name as NSString).pathExtension] else { continue }
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent(name)))
            files[name] = File(body: ByteBuffer(bytes: bytes), contentType: type, etag: "\"\(Hex.encode(Array(SHA256.digest(bytes).prefix(16))))\"")
        }
        return ClientFiles(files: files)
    }
}

/// `GET /client/{file}`: the web client's modules and demo page, for pages on any listed origin
/// (`HERALD_CORS_ORIGINS`) and Herald's own. Kept by browsers for five minutes, then checked again
/// by their `ETag` (a `304` when unchanged), so a page picks up a new Herald's client within minutes.
struct ClientFilesController {
    let files: ClientFiles?

    func register(in routes: RouteRegistry) {
        routes.add(.get, "/client/{file}", access: .anyone, crossOrigin: true) { request, context -> Response in
            guard let name = context.parameters.get("file"), let file = files?.files[name] else {
                throw APIError(.notFound, code: "not_found", message: "There is no such file of the web client.")
            }
            var headers = HTTPFields()
            headers[.cacheControl] = "public, max-age=300"
            headers[.eTag] = file.etag
            if request.headers[values: .ifNoneMatch].contains(where: {
                $0.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == file.etag }
            }) {
                return Response(status: .notModified, headers: headers)
            }
            headers[.contentType] = file.contentType
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: file.body))
        }
    }
}
