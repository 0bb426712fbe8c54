import Foundation
import HeraldCore
import HeraldStore
import Hummingbird
import MultipartKit
import Postgres

/// The admin console at `/console`: pages rendered on the server from `console/templates`, signed in
/// with the admin token.
///
/// A sign-in is a row of `console_sessions` named by an HttpOnly, `SameSite=Strict` cookie (`Secure`
/// when the request came over TLS, as a proxy's `X-Forwarded-Proto: https` says). Every form carries
/// the sign-in's CSRF token and every POST must repeat it; a POST from another origin is refused
/// whatever it carries. The admin API's bearer authentication is separate and unchanged.
public struct ConsoleRoutes<Context: ConsoleRequestContext>: Sendable {
    let site: ConsoleSite
    let adminToken: String?
    let sessions: ConsoleSessionStore
    let overview: ConsoleOverviewStore
    let channels: ChannelStore
    let templates: TemplateStore
    let notifications: ConsoleNotificationStore
    let notificationStore: NotificationStore
    let actions: ConsoleActions
    let exports: UserExportStore
    let erasures: UserErasureStore
    let userSessions: SessionStore
    let collections: CollectionStore
    let push: PushStore
    let topics: TopicStore
    let schedules: ScheduleStore

    public init(site: ConsoleSite, client: PostgresClient, adminToken: String?, actions: ConsoleActions) {
        self.site = site
        self.adminToken = adminToken
        self.actions = actions
        self.templates = TemplateStore(client: client)
        self.notifications = ConsoleNotificationStore(client: client)
        self.notificationStore = NotificationStore(client: client)
        self.exports = UserExportStore(client: client)
        self.erasures = UserErasureStore(client: client)
        self.userSessions = SessionStore(client: client)
        self.collections = CollectionStore(client: client)
        self.push = PushStore(client: client)
        self.topics = TopicStore(client: client)
        self.schedules = ScheduleStore(client: client)
        self.sessions = ConsoleSessionStore(client: client)
        self.overview = ConsoleOverviewStore(client: client)
        self.channels = ChannelStore(client: client)
    }

    /// The cookie that names a sign-in.
    static var cookieName: String { "herald_console" }

    public func register(on router: Router<Context>) {
        let console = router.group("console").add(middleware: ConsoleMiddleware<Context>(site: site))
        console.get("assets/{name}") { _, context in try asset(context) }
        registerSignIn(on: console)
        registerOverview(on: console)
        registerChannels(on: console)
        registerTemplates(on: console)
        registerTopics(on: console)
        registerSend(on: console)
        registerScheduled(on: console)
        registerNotifications(on: console)
        registerUsers(on: console)
        registerPush(on: console)
    }

    /// The signed-in admin's sign-in, from the cookie; throws `ConsoleSignInRequired` without one.
    func requireSession(_ request: Request) async throws -> ConsoleSessionStore.Session {
        // Without an admin token there is no sign-in; with a new one, the old one's sign-ins are over.
        guard let adminToken, let token = Self.sessionToken(request), let session = try await sessions.session(token: token, adminToken: adminToken)
        else {
            throw ConsoleSignInRequired()
        }
        return session
    }

    static func sessionToken(_ request: Request) -> String? {
        guard let value = request.cookies[cookieName]?.value, value.utf8.count == 64 else { return nil }
        return value
    }

    /// A POSTed form, after the checks every console POST passes: same origin, signed in, the sign-in's
    /// CSRF token.
    func requireForm<Form: ConsoleForm>(_ type: Form.Type, _ request: Request, context: Context) async throws -> (Form, ConsoleSessionStore.Session) {
        try Self.requireSameOrigin(request)
        let session = try await requireSession(request)
        let form = try await Self.decodeForm(type, request, context: context)
        guard ConstantTime.equals(form.csrf, session.csrfToken) else {
            throw ConsoleRefusal(.forbidden, "This form has expired or did not come from this console. Go back, reload the page and try again.")
        }
        return (form, session)
    }

    /// Refuses a request whose `Origin` is another site's (browsers send it with every POST).
    static func requireSameOrigin(_ request: Request) throws {
        guard let origin = request.headers[.origin] else { return }
        let host = request.head.authority ?? ""
        guard
            let originHost = URLComponents(string: origin).flatMap({ components -> String? in
                guard let host = components.host else { return nil }
                return components.port.map { "\(host):\($0)" } ?? host
            }), originHost == host
        else {
            throw ConsoleRefusal(.forbidden, "This request came from another site.")
        }
    }

    /// A `multipart/form-data` POST (a form with a file), after the same checks as `requireForm`.
    func requireUpload<Form: ConsoleForm>(_ type: Form.Type, _ request: Request, context: Context) async throws -> (Form, ConsoleSessionStore.Session)
    {
        try Self.requireSameOrigin(request)
        let session = try await requireSession(request)
        let contentType = request.headers[.contentType] ?? ""
        guard contentType.hasPrefix("multipart/form-data"),
            let boundary = contentType.split(separator: ";").lazy.map({ $0.trimmingCharacters(in: .whitespaces) })
                .first(where: { $0.hasPrefix("boundary=") })?.dropFirst("boundary=".count)
        else {
            throw ConsoleRefusal(.unsupportedMediaType, "Files are sent as multipart/form-data.")
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maximumUploadBytes)
        } catch {
            throw ConsoleRefusal(.contentTooLarge, "The upload is larger than \(Self.maximumUploadBytes / 1024) KB.")
        }
        let form: Form
        do {
            form = try FormDataDecoder().decode(type, from: body, boundary: String(boundary).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        } catch {
            throw ConsoleRefusal(.badRequest, "The form is missing a field.")
        }
        guard ConstantTime.equals(form.csrf, session.csrfToken) else {
            throw ConsoleRefusal(.forbidden, "This form has expired or did not come from this console. Go back, reload the page and try again.")
        }
        return (form, session)
    }

    /// The most an uploaded form may carry: credentials and fixture files are a few KB.
    static var maximumUploadBytes: Int { 1 << 20 }

    static func decodeForm<Form: Decodable>(_ type: Form.Type, _ request: Request, context: Context) async throws -> Form {
        guard request.headers[.contentType]?.hasPrefix("application/x-www-form-urlencoded") == true else {
            throw ConsoleRefusal(.unsupportedMediaType, "Forms are sent as application/x-www-form-urlencoded.")
        }
        let body = try await request.body.collect(upTo: 1 << 20)
        do {
            return try URLEncodedFormDecoder().decode(type, from: String(buffer: body))
        } catch {
            throw ConsoleRefusal(.badRequest, "The form is missing a field.")
        }
    }

    /// A page for the signed-in admin.
    func page(
        _ template: String,
        title: String,
        section: ConsoleChrome.Section?,
        session: ConsoleSessionStore.Session?,
        status: HTTPResponse.Status = .ok,
        values: [String: Any] = [:]
    ) -> Response {
        let chrome = ConsoleChrome(title: title, section: section, csrfToken: session?.csrfToken)
        return Self.html(site.render(template, chrome: chrome, values: values), status: status)
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text))
        )
    }

    /// `303 See Other` to a console path: the answer to every successful POST, so that reloading the
    /// page does not send the form again.
    static func redirect(_ path: String) -> Response {
        Response.redirect(to: path, type: .normal)
    }

    private func asset(_ context: Context) throws -> Response {
        let name = try context.parameters.require("name")
        guard let asset = site.assets[name] else { throw ConsoleRefusal(.notFound, "There is no such file.") }
        return Response(
            status: .ok,
            headers: [.contentType: asset.contentType, .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: asset.bytes))
        )
    }
}

/// What the console needs of the server's request context: the client's address, for the limit on
/// failed sign-ins.
public protocol ConsoleRequestContext: RequestContext {
    /// The client's IP address, as the admin API's rate limits key it.
    var clientAddress: String? { get }
}

/// A form the console POSTs: each carries the sign-in's CSRF token.
protocol ConsoleForm: Decodable {
    var csrf: String { get }
}

/// A form that is a button and nothing else (delete, cancel): only its CSRF token.
struct ButtonForm: ConsoleForm {
    var csrf: String
}

/// The request needs a sign-in and has none (or an expired one).
struct ConsoleSignInRequired: Error {}

/// A request the console refuses, with the status and the sentence the error page shows.
struct ConsoleRefusal: Error {
    var status: HTTPResponse.Status
    var message: String

    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }
}
