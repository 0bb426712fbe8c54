import APNs
import ArgumentParser
import ChildProcess
import Foundation
import HeraldCore
import HeraldTesting
import Postgres

#if canImport(Glibc)
import Glibc
#endif

/// What the soak runs on: a primary and a hot standby streaming from it, the mock APNs, three
/// `herald serve` processes reading on the standby, and HAProxy (Debian's `haproxy`) in front of them.
/// Everything lives under one temporary directory, removed by `stop()`.
final class SoakDeployment: @unchecked Sendable {
    static let adminToken = "herald-soak-admin-token-0123456789abcdef"
    static let topic = "com.example.herald.soak"
    static let haproxy = "/usr/sbin/haproxy"

    let directory: String
    let primary: PostgresCluster
    let standby: PostgresCluster
    let mock: MockAPNsServer
    /// The load balancer's port: every request of the load goes here.
    let port: Int
    /// The Herald processes' ports, fixed so that a restarted one comes back where HAProxy looks.
    let heraldPorts: [Int]
    private var heralds: [ServeProcess?]
    private var balancer: ChildProcess?
    private let environment: [String: String]

    private init(directory: String, primary: PostgresCluster, standby: PostgresCluster, mock: MockAPNsServer, port: Int, heraldPorts: [Int]) {
        self.directory = directory
        self.primary = primary
        self.standby = standby
        self.mock = mock
        self.port = port
        self.heraldPorts = heraldPorts
        self.heralds = Array(repeating: nil, count: heraldPorts.count)
        environment = [
            "DATABASE_URL": primary.conninfo(), "HERALD_READ_DATABASE_URL": standby.conninfo(),
            "HERALD_ADMIN_TOKEN": Self.adminToken, "HERALD_SECRET_KEY": String(repeating: "5", count: 64),
            "HERALD_APNS_URL": mock.baseURL, "HERALD_APNS_CA_FILE": mock.trustRootFile,
            "HERALD_REFRESH_MIN_INTERVAL": "0s", "HERALD_PUSH_LEASE": "5s", "HERALD_PRESENCE_TTL": "10s",
            "HERALD_PRESENCE_HEARTBEAT": "2s", "HERALD_RATE_LIMIT_SESSION": "off", "HERALD_RATE_LIMIT_ADDRESS": "off",
            "HERALD_DB_POOL_SIZE": "6",
        ]
    }

    static func start(heralds count: Int) async throws -> SoakDeployment {
        guard FileManager.default.isExecutableFile(atPath: haproxy) else {
            throw ValidationError("the soak needs HAProxy: apt-get install haproxy")
        }
        let directory = NSTemporaryDirectory() + "herald-soak-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let primary = try PostgresCluster(directory: directory + "/primary", durable: false)
        try await primary.start()
        var standby = try PostgresCluster(directory: directory + "/standby", durable: false)
        standby.extraSettings = ["hot_standby_feedback = on"]
        try await standby.createStandby(of: primary)
        try await standby.start()
        let credentials = TestCredentials.shared
        let key = try P256Key(pem: credentials.signingKeyPEM)
        let mock = try await MockAPNsServer.start(
            authentication: .token(publicKeyPEM: key.publicKeyPEM, keyID: credentials.keyID, teamID: credentials.teamID)
        )
        let ports = try (0...count).map { _ in try Self.freePort() }
        let deployment = SoakDeployment(
            directory: directory,
            primary: primary,
            standby: standby,
            mock: mock,
            port: ports[0],
            heraldPorts: Array(ports.dropFirst())
        )
        for index in 0..<count { try await deployment.startHerald(index) }
        try deployment.startBalancer()
        return deployment
    }

    /// Starts Herald number `index` on its port.
    func startHerald(_ index: Int) async throws {
        heralds[index] = try await ServeProcess.start(
            conninfo: primary.conninfo(),
            adminToken: Self.adminToken,
            environment: environment,
            port: heraldPorts[index]
        )
    }

    /// Kills Herald number `index` (SIGKILL: no goodbye to its connections and streams).
    func killHerald(_ index: Int) {
        heralds[index]?.process.signal(SIGKILL)
        heralds[index] = nil
    }

    private func startBalancer() throws {
        // Round robin over the three, each checked every half second; a connection refused by a dead
        // one is tried on another (`redispatch`). Streams are tunnels once upgraded.
        let servers = heraldPorts.enumerated().map { "    server herald\($0.offset + 1) 127.0.0.1:\($0.element) check inter 500ms fall 2 rise 2" }
        let configuration = """
            global
                maxconn 8000
            defaults
                mode http
                timeout connect 2s
                timeout client 60s
                timeout server 60s
                timeout tunnel 1h
                retries 3
                option redispatch
            frontend herald
                bind 127.0.0.1:\(port)
                default_backend heralds
            backend heralds
                balance roundrobin
                option httpchk GET /healthz
            \(servers.joined(separator: "\n"))

            """
        try configuration.write(toFile: directory + "/haproxy.cfg", atomically: true, encoding: .utf8)
        balancer = try ChildProcess.spawn(
            [Self.haproxy, "-db", "-f", directory + "/haproxy.cfg"],
            environment: [],
            output: .file(directory + "/haproxy.log")
        )
    }

    /// Stops everything and removes the directory. Blocks.
    func stop() async {
        for index in heralds.indices { killHerald(index) }
        if let balancer {
            kill(balancer.pid, SIGTERM)
            _ = balancer.wait()
        }
        await mock.shutdown()
        try? standby.stopBlocking(immediate: true)
        try? primary.stopBlocking(immediate: true)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A loopback port no one listens on now.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw ValidationError("cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
