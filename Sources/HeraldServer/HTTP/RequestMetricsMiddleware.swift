import Dispatch
import HTTPTypes
import Hummingbird
import Metrics
import Synchronization

/// Hummingbird's request metrics — `hb.requests`, `http.server.request.duration`,
/// `hb.request.errors` and `http.server.active_requests`, with the same labels — recorded when the
/// route returns its response rather than after the response is written.
///
/// Why not Hummingbird's `MetricsMiddleware`: it records after the write by wrapping every response
/// body in a closure, and a closure body loses the response writer's fast path, which sends head, body
/// and end in one write to the channel. Wrapped, a response took three writes to the event loop and
/// two `write` system calls (docs/decisions/2026-11-22-one-write-per-response.md). Every Herald response is one buffer, written as soon
/// as the route returns, so the duration ends before the write instead of after it.
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = HeraldRequestContext

    private let cache = Cache()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let active = cache.activeRequests(request.method)
        active.increment()
        defer { active.decrement() }
        do {
            let response = try await next(request, context)
            let metrics = cache.endpoint(.init(route: context.endpointPath ?? "Unknown", method: request.method, status: response.status))
            metrics.requests.increment()
            metrics.duration.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let metrics = cache.endpoint(.init(route: context.endpointPath ?? "NotFound", method: request.method, status: status))
            metrics.requests.increment()
            metrics.errors.increment()
            throw error
        }
    }

    /// The metric objects per method and per route, method and status, made once: a factory lookup
    /// per request would cost a lock and a dictionary probe in the metrics backend each time.
    final class Cache: Sendable {
        struct Key: Hashable {
            var route: String
            var method: HTTPRequest.Method
            var status: HTTPResponse.Status
        }

        struct Endpoint: Sendable {
            let requests: Counter
            let duration: Timer
            let errors: Counter

            init(_ key: Key) {
                let dimensions = [
                    ("http.route", key.route),
                    ("http.request.method", key.method.rawValue),
                    ("http.response.status_code", String(key.status.code)),
                ]
                requests = Counter(label: "hb.requests", dimensions: dimensions)
                duration = Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds)
                errors = Counter(
                    label: "hb.request.errors",
                    dimensions: [
                        ("http.route", key.route), ("http.request.method", key.method.rawValue), ("error.type", String(key.status.code)),
                    ]
                )
            }
        }

        private let methods = Mutex<[HTTPRequest.Method: Meter]>([:])
        private let endpoints = Mutex<[Key: Endpoint]>([:])

        func activeRequests(_ method: HTTPRequest.Method) -> Meter {
            methods.withLock { methods in
                if let meter = methods[method] { return meter }
                let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method.rawValue)])
                methods[method] = meter
                return meter
            }
        }

        func endpoint(_ key: Key) -> Endpoint {
            endpoints.withLock { endpoints in
                if let endpoint = endpoints[key] { return endpoint }
                let endpoint = Endpoint(key)
                endpoints[key] = endpoint
                return endpoint
            }
        }
    }
}
