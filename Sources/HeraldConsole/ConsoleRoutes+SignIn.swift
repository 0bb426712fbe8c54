import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension ConsoleRoutes {
    struct SignInForm: Decodable {
        var token: String
    }

    struct SignOutForm: ConsoleForm {
        var csrf: String
    }

    func registerSignIn(on console: RouterGroup<Context>) {
        console.get("sign-in") { request, _ in
            if (try? await requireSession(request)) != nil { return Self.redirect("/console") }
            return signInPage(status: .ok, problem: nil)
        }
        console.post("sign-in") { request, context in
            try Self.requireSameOrigin(request)
            let form = try await Self.decodeForm(SignInForm.self, request, context: context)
            guard let adminToken else {
                return signInPage(
                    status: .forbidden,
                    problem: "The admin API is off on this server (no HERALD_ADMIN_TOKEN), and the console with it."
                )
            }
            if let wait = await actions.admitSignIn(context.clientAddress) {
                var refused = signInPage(status: .tooManyRequests, problem: "Too many failed sign-ins from this address; try again in \(wait) s.")
                refused.headers[.retryAfter] = String(wait)
                return refused
            }
            guard ConstantTime.equals(form.token, adminToken) else {
                actions.signInFailed(context.clientAddress)
                return signInPage(status: .unauthorized, problem: "That is not this server's admin token.")
            }
            let (token, session) = try await sessions.create(lifetime: site.settings.sessionLifetime, adminToken: adminToken)
            var response = Self.redirect("/console")
            response.setCookie(
                Cookie(
                    name: Self.cookieName,
                    value: token,
                    maxAge: Int(session.expiresAt.timeIntervalSinceNow),
                    path: "/console",
                    secure: Self.cameOverTLS(request),
                    httpOnly: true,
                    sameSite: .strict
                )
            )
            return response
        }
        console.post("sign-out") { request, context in
            _ = try await requireForm(SignOutForm.self, request, context: context)
            if let token = Self.sessionToken(request) { try await sessions.delete(token: token) }
            var response = Self.redirect("/console/sign-in")
            response.setCookie(
                Cookie(
                    name: Self.cookieName,
                    value: "",
                    maxAge: 0,
                    path: "/console",
                    secure: Self.cameOverTLS(request),
                    httpOnly: true,
                    sameSite: .strict
                )
            )
            return response
        }
    }

    private func signInPage(status: HTTPResponse.Status, problem: String?) -> Response {
        page("sign-in", title: "Sign in", section: nil, session: nil, status: status, values: ["problem": problem ?? false])
    }

    /// True when the browser reached us over TLS: a TLS-terminating proxy says so in
    /// `X-Forwarded-Proto` (Herald itself serves plain HTTP).
    static func cameOverTLS(_ request: Request) -> Bool {
        request.head.scheme == "https" || request.headers[.init("X-Forwarded-Proto")!]?.lowercased() == "https"
    }
}
