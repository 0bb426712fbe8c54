import Foundation
import HeraldServer
import HeraldStore
import HeraldTesting
import Postgres
import Prometheus
import Testing

/// `openapi.yaml` and the router describe the same API.
@Suite("OpenAPI document")
struct OpenAPIDocumentTests {
    /// The `paths` of the document: each path with its operations. The document keeps paths at two
    /// spaces and operations at four, which this reader relies on (and fails loudly if broken).
    func documentedRoutes() throws -> Set<RouteDescription> {
        let text = try String(contentsOfFile: TestPostgres.repositoryRoot() + "/openapi.yaml", encoding: .utf8)
        var routes = Set<RouteDescription>()
        var inPaths = false
        var currentPath: String?
        let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" {
                inPaths = true
                continue
            }
            guard inPaths else { continue }
            if !line.isEmpty, !line.hasPrefix(" "), !line.hasPrefix("#") {
                break  // next top-level key
            }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                currentPath = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let key = String(line.dropFirst(4).dropLast())
                if methods.contains(key), let currentPath {
                    routes.insert(RouteDescription(method: key, path: currentPath))
                }
            }
        }
        return routes
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedRouteExists() throws {
        let client = PostgresClient(configuration: .init(conninfo: "", maximumConnections: 1))
        let dependencies = HeraldApplication.Dependencies(
            client: client,
            migrator: Migrator(client: client, migrations: []),
            metricsRegistry: PrometheusCollectorRegistry(),
            adminToken: nil
        )
        let routed = Set(HeraldApplication.buildRouter(dependencies).routes)
        let documented = try documentedRoutes()
        #expect(!routed.isEmpty)
        #expect(routed.subtracting(documented).isEmpty, "routed but not in openapi.yaml: \(routed.subtracting(documented))")
        #expect(documented.subtracting(routed).isEmpty, "in openapi.yaml but not routed: \(documented.subtracting(routed))")
    }
}
