import Foundation
import HeraldStore
import Hummingbird
import Logging
import Postgres
import Prometheus

/// `GET /healthz`, `GET /readyz` and `GET /metrics`.
struct OperationsController: Sendable {
    let migrator: Migrator
    let metricsRegistry: PrometheusCollectorRegistry

    func register(in routes: RouteRegistry) {
        routes.add(.get, "/healthz", access: .anyone) { _, _ in
            StatusBody(status: "ok")
        }
        routes.add(.get, "/readyz", access: .anyone) { _, context in
            try await ready(context: context)
        }
        routes.add(.get, "/metrics", access: .anyone) { _, _ in
            metrics()
        }
    }

    struct StatusBody: ResponseEncodable {
        var status: String
    }

    /// Ready means: the database answers and every migration of this build is applied.
    func ready(context: HeraldRequestContext) async throws -> StatusBody {
        let status: Migrator.Status
        do {
            status = try await migrator.status()
        } catch {
            context.logger.warning("readiness check failed", metadata: ["error": context.logger.describe(error)])
            throw APIError(.serviceUnavailable, code: "not_ready", message: "The database is unreachable.")
        }
        if !status.problems.isEmpty {
            throw APIError(.serviceUnavailable, code: "not_ready", message: "The database schema does not match this build.")
        }
        if !status.pending.isEmpty {
            throw APIError(.serviceUnavailable, code: "not_ready", message: "\(status.pending.count) migration(s) are not applied yet.")
        }
        return StatusBody(status: "ready")
    }

    func metrics() -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        var buffer: [UInt8] = []
        metricsRegistry.emit(into: &buffer)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: buffer)))
    }
}
