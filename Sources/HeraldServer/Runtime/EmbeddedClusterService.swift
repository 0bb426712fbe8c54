import Logging
import Postgres
import ServiceLifecycle

/// Keeps the embedded cluster for as long as Herald runs and stops it on shutdown.
///
/// Listed first in the service group, so it shuts down last: after the HTTP server has finished its
/// in-flight requests and the pool has closed its connections.
struct EmbeddedClusterService: Service {
    let cluster: PostgresCluster
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        logger.info("stopping the embedded PostgreSQL cluster", metadata: ["directory": "\(cluster.directory)"])
        try await cluster.stop()
    }
}
