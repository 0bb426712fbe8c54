import Hummingbird
import Logging
import Postgres

/// Around every console response: the security headers, and HTML answers for what the handlers throw
/// (the admin API's errors are JSON; a browser wants a page).
struct ConsoleMiddleware<Context: ConsoleRequestContext>: RouterMiddleware {
    let site: ConsoleSite

    /// Scripts, styles and images only from the console itself: no inline script or style, no other
    /// origin, no framing, forms only to the console.
    static var contentSecurityPolicy: String {
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch is ConsoleSignInRequired {
            response =
                request.method == .get
                ? ConsoleRoutes<Context>.redirect("/console/sign-in")
                : errorPage(.forbidden, "You are not signed in to the console, or your sign-in has expired.")
        } catch let refusal as ConsoleRefusal {
            response = errorPage(refusal.status, refusal.message)
        } catch let error as HTTPError where error.status == .notFound {
            response = errorPage(.notFound, "There is no such page.")
        } catch {
            context.logger.error("console request failed", metadata: ["error": context.logger.describe(error)])
            response = errorPage(.internalServerError, "Something went wrong; the server's log says what.")
        }
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        // `same-origin`, not `no-referrer`: with no referrer, Chromium sends `Origin: null` with the
        // console's own form posts, and the origin check needs the real one.
        response.headers[.init("Referrer-Policy")!] = "same-origin"
        response.headers[.init("X-Frame-Options")!] = "DENY"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }

    private func errorPage(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let chrome = ConsoleChrome(title: status.reasonPhrase, section: nil, csrfToken: nil)
        return ConsoleRoutes<Context>.html(site.render("error", chrome: chrome, values: ["message": message, "status": status.code]), status: status)
    }
}
