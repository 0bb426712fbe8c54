import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore

/// A browser signed in to the admin console, as far as tests need one: its cookie and the CSRF token
/// of its pages, and the requests a browser makes (form posts, uploads) through Hummingbird's test
/// client.
public struct ConsoleBrowser: Sendable {
    public static let cookieName = "herald_console"

    public var cookie: String
    public var csrf: String

    public init(cookie: String, csrf: String) {
        self.cookie = cookie
        self.csrf = csrf
    }

    /// The cookie header a signed-in browser sends.
    public var headers: HTTPFields {
        var fields = HTTPFields()
        fields[.cookie] = "\(Self.cookieName)=\(cookie)"
        return fields
    }

    /// Signs in with `token` and reads the CSRF token from the overview; throws unless the console
    /// answers as a sign-in should (a redirect to the overview with a cookie, then the page).
    public static func signIn(_ client: some TestClientProtocol, token: String, headers: HTTPFields = [:]) async throws -> ConsoleBrowser {
        let response = try await post(client, "/console/sign-in", form: ["token": token], headers: headers)
        guard response.status == .seeOther, response.headers[.location] == "/console" else {
            throw ConsoleBrowserError("sign-in answered \(response.status) to \(response.headers[.location] ?? "nowhere")")
        }
        guard let setCookie = response.headers[.setCookie], let cookie = cookieValue(setCookie) else {
            throw ConsoleBrowserError("sign-in set no console cookie")
        }
        let overview = try await client.execute(uri: "/console", method: .get, headers: ConsoleBrowser(cookie: cookie, csrf: "").headers)
        guard overview.status == .ok, let csrf = csrfToken(String(buffer: overview.body)) else {
            throw ConsoleBrowserError("the overview answered \(overview.status) without a CSRF token")
        }
        return ConsoleBrowser(cookie: cookie, csrf: csrf)
    }

    /// A form post (`application/x-www-form-urlencoded`), as a browser sends one.
    public static func post(
        _ client: some TestClientProtocol,
        _ path: String,
        form: [String: String],
        headers: HTTPFields = [:]
    ) async throws -> TestResponse {
        var fields = headers
        fields[.contentType] = "application/x-www-form-urlencoded"
        let body = form.map { key, value in
            "\(key)=\(value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        }.joined(separator: "&")
        return try await client.execute(uri: path, method: .post, headers: fields, body: ByteBuffer(string: body))
    }

    /// A `multipart/form-data` post of `fields` and one file field `file`, as a file upload sends one.
    public static func upload(
        _ client: some TestClientProtocol,
        _ path: String,
        _ fields: [String: String],
        file: [UInt8]?,
        headers: HTTPFields
    ) async throws -> TestResponse {
        let boundary = "herald-test-boundary-0123456789"
        var body = ByteBuffer()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            body.writeString("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n")
        }
        if let file {
            body.writeString("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"upload\"\r\n")
            body.writeString("Content-Type: application/octet-stream\r\n\r\n")
            body.writeBytes(file)
            body.writeString("\r\n")
        }
        body.writeString("--\(boundary)--\r\n")
        var all = headers
        all[.contentType] = "multipart/form-data; boundary=\(boundary)"
        return try await client.execute(uri: path, method: .post, headers: all, body: body)
    }

    /// The console cookie's value in a `Set-Cookie` header.
    public static func cookieValue(_ setCookie: String) -> String? {
        guard setCookie.hasPrefix(cookieName + "=") else { return nil }
        return setCookie.dropFirst(cookieName.count + 1).split(separator: ";").first.map(String.init)
    }

    /// The CSRF token a console page's forms carry.
    public static func csrfToken(_ html: String) -> String? {
        guard let range = html.range(of: #"name="csrf" value=""#) else { return nil }
        return html[range.upperBound...].split(separator: "\"").first.map(String.init)
    }
}

/// A console answer that was not what a browser's step expects.
public struct ConsoleBrowserError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
