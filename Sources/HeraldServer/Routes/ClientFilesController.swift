import Foundation
import HeraldCore
import Hummingbird
import NIOCore

/// The web client's modules (`web/*.js`), read once at start: what `GET /client/{file}` serves, so that
/// a page can import the client straight from Herald (`import … from "https://herald…/client/herald.js"`);
/// and its demo page (`web/demo.html`), served at `/demo` only when asked (`HERALD_DEMO=on`).
public struct ClientFiles: Sendable {
    struct File: Sendable {
        var body: ByteBuffer
        /// A strong validator: the first 16 bytes of the body's SHA-256, quoted.
        var etag: String

        init(_ bytes: [UInt8]) {
            body = ByteBuffer(bytes: bytes)
            etag = "\"\(Hex.encode(Array(SHA256.digest(bytes).prefix(16))))\""
        }
    }

    let files: [String: File]
    let demo: File?

    /// The `.js` files directly in `directory` (a module's siblings are the other modules it imports),
    /// and with `demo` its `demo.html`. Nothing else there is served: not the package's files, the
    /// tests or the types — and no HTML under `/client/`, where a page would share Herald's origin
    /// with the console.
    public static func load(directory: String, demo: Bool = false) throws -> ClientFiles {
        let folder = URL(fileURLWithPath: directory)
        var files: [String: File] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasSuffix(".js") {
            files[name] = File(Array(try Data(contentsOf: folder.appendingPathComponent(name))))
        }
        let page = demo ? File(Array(try Data(contentsOf: folder.appendingPathComponent("demo.html")))) : nil
        return ClientFiles(files: files, demo: page)
    }
}

/// `GET /client/{file}`: the web client's modules, for pages on any listed origin
/// (`HERALD_CORS_ORIGINS`) and Herald's own. Kept by browsers for five minutes, then checked again
/// by their `ETag` (a `304` when unchanged), so a page picks up a new Herald's client within minutes.
/// `GET /demo`: the demo page, when Herald was asked to serve it; else 404.
struct ClientFilesController {
    let files: ClientFiles?

    func register(in routes: RouteRegistry) {
        routes.add(.get, "/client/{file}", access: .anyone, crossOrigin: true) { request, context -> Response in
            guard let name = context.parameters.get("file"), let file = files?.files[name] else {
                throw APIError(.notFound, code: "not_found", message: "There is no such file of the web client.")
            }
            return Self.answer(file, type: "text/javascript; charset=utf-8", to: request)
        }
        routes.add(.get, "/demo", access: .anyone) { request, _ -> Response in
            guard let page = files?.demo else {
                throw APIError(.notFound, code: "not_found", message: "The demo page is served only with HERALD_DEMO=on.")
            }
            return Self.answer(page, type: "text/html; charset=utf-8", to: request)
        }
    }

    static func answer(_ file: ClientFiles.File, type: String, to request: Request) -> Response {
        var headers = HTTPFields()
        headers[.cacheControl] = "public, max-age=300"
        headers[.eTag] = file.etag
        // Taken for what it says it is, never sniffed as something else.
        headers[.xContentTypeOptions] = "nosniff"
        let validators = request.headers[values: .ifNoneMatch].flatMap { $0.split(separator: ",") }.map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        // Weak comparison (RFC 9110 §13.1.2): a proxy may have marked the tag weak.
        if validators.contains(where: { $0 == "*" || $0 == file.etag || $0 == "W/" + file.etag }) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = type
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: file.body))
    }
}
