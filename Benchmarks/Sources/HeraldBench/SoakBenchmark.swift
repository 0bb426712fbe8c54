import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldTesting
import NIOCore
import NIOHTTP1
import Postgres

/// The `soak` case: three `herald serve` processes behind HAProxy, on a primary and a hot standby,
/// under mixed load for `--minutes`; one Herald is killed and restarted and the standby restarted
/// mid-run. Then every polling user's collection, every counter, every send and every device's pushes
/// are checked against the primary, and every failed request is listed with its time. Writes the
/// per-minute throughput and latency as a CSV (`scripts/plot-soak.py` draws it).
struct SoakBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Three Herald processes behind HAProxy on a primary and a standby: mixed load, a kill, a standby restart, then every check."
    )

    @Option(help: "Minutes of load.")
    var minutes: Double = 10

    @Option(help: "Users (each with a session and a device).")
    var users: Int = 600

    @Option(help: "Users that poll their collection continuously (with receipts and read marks).")
    var pollers: Int = 60

    @Option(help: "Users that hold live streams, opened and dropped in turn.")
    var streamers: Int = 40

    @Option(help: "Targeted sends a second (1–4 users each).")
    var sendsPerSecond: Int = 20

    @Option(help: "Seconds between broadcasts (audience all).")
    var broadcastSeconds: Int = 45

    @Option(help: "Where to write the per-minute CSV.")
    var csv: String = "soak.csv"

    func validate() throws {
        // Half a minute still fits the kill, the restart 15 s later and the standby's restart (a smoke
        // run); a measurement wants several minutes.
        guard minutes >= 0.5, pollers + streamers < users, users >= 10 else {
            throw ValidationError("--minutes at least 0.5; --pollers + --streamers fewer than --users")
        }
    }

    func run() async throws {
        print("Starting a primary, a standby, the mock APNs, 3 Herald processes and HAProxy…")
        let deployment = try await SoakDeployment.start(heralds: 3)
        let findings: [String]
        do {
            findings = try await soak(deployment)
        } catch {
            await deployment.stop()
            throw error
        }
        await deployment.stop()
        guard findings.isEmpty else {
            print("\nFINDINGS:\n" + findings.map { "- " + $0 }.joined(separator: "\n"))
            throw ExitCode.failure
        }
        print("\nEvery check passed.")
    }

    func soak(_ deployment: SoakDeployment) async throws -> [String] {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 256)
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let primary = PostgresClient(configuration: .init(conninfo: deployment.primary.conninfo(), maximumConnections: 2))
        let standby = PostgresClient(
            configuration: .init(conninfo: deployment.standby.conninfo(), maximumConnections: 1, metricsPrefix: "soak_standby")
        )
        defer {
            Task {
                try? await http.shutdown()
                await primary.shutdown()
                await standby.shutdown()
            }
        }
        let base = "http://127.0.0.1:\(deployment.port)"
        try await waitUntil("HAProxy to answer", timeout: .seconds(30)) {
            let response = try? await http.execute(HTTPClientRequest(url: base + "/healthz"), timeout: .seconds(2))
            return response?.status == .ok
        }
        let (sessions, devices) = try await seed(SoakHTTP(http: http, base: base, recorder: SoakRecorder()), deployment: deployment)
        let names = sessions.keys.sorted()
        let pollers = names.prefix(pollers).map { SoakPoller(user: $0, session: sessions[$0]!, device: devices[$0]!) }
        let recorder = SoakRecorder()
        let stop = SoakStop()
        let sends = SoakSends()
        let load = SoakLoad(
            client: SoakHTTP(http: http, base: base, recorder: recorder),
            port: deployment.port,
            users: names,
            sessions: sessions,
            devices: devices,
            pollers: pollers,
            streamers: Array(names.dropFirst(self.pollers).prefix(streamers)),
            pushOnly: Array(names.dropFirst(self.pollers + streamers)),
            sends: sends,
            stop: stop,
            sendsPerSecond: sendsPerSecond,
            broadcastInterval: .seconds(broadcastSeconds)
        )
        print("Load for \(minutes) minutes through HAProxy on port \(deployment.port)…")
        async let running: Void = load.run()
        let total = minutes * 60
        func wait(until seconds: Double) async {
            let remaining = seconds - recorder.elapsed
            if remaining > 0 { try? await Task.sleep(for: .milliseconds(Int(remaining * 1000))) }
        }
        await wait(until: total * 0.35)
        let killedAt = recorder.elapsed
        deployment.killHerald(1)
        print("  \(format(killedAt)) s: killed herald 2 (SIGKILL)")
        await wait(until: killedAt + 15)
        try await deployment.startHerald(1)
        print("  \(format(recorder.elapsed)) s: herald 2 is back")
        await wait(until: total * 0.6)
        let standbyAt = recorder.elapsed
        try await deployment.standby.restart()
        print("  \(format(standbyAt)) s: restarted the standby (\(format(recorder.elapsed - standbyAt, digits: 1)) s)")
        await wait(until: total)
        stop.set()
        await running
        try recorder.csv().write(toFile: csv, atomically: true, encoding: .utf8)
        print("Load stopped; per-minute figures in \(csv). Checking…")

        var findings: [String] = []
        // The kill's own connections may fail: requests in flight on the killed process, and those
        // HAProxy sent there before its checks marked it down (one second at most).
        let window = killedAt...(killedAt + 5)
        let failures = recorder.failures
        let outside = failures.filter { !window.contains($0.at) }
        print("Requests that failed: \(failures.count), \(failures.count - outside.count) of them within 5 s of the kill.")
        for failure in outside.prefix(20) { findings.append("\(format(failure.at, digits: 1)) s \(failure.kind): \(failure.detail)") }
        if outside.count > 20 { findings.append("… and \(outside.count - 20) more failed requests outside the kill") }
        await printReads(http: http, ports: deployment.heraldPorts)
        let checks = SoakCheck(
            primary: primary,
            standby: standby,
            mock: deployment.mock,
            client: SoakHTTP(http: http, base: base, recorder: SoakRecorder())
        )
        findings += try await checks.run(pollers: pollers, sends: sends.all, sessions: sessions, devices: devices)
        return findings
    }

    /// Where the Herald processes read, from their metrics (the restarted one counts since its start).
    func printReads(http: HTTPClient, ports: [Int]) async {
        var totals: [String: Double] = [:]
        for port in ports {
            guard let response = try? await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(5)),
                let body = try? await response.body.collect(upTo: 4 << 20)
            else { continue }
            for line in String(buffer: body).split(separator: "\n") where line.hasPrefix("herald_read_") && !line.hasPrefix("herald_read_db") {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let value = Double(parts[1]), !line.contains("lag_seconds"), !line.contains("_fit") else { continue }
                totals[String(parts[0]), default: 0] += value
            }
        }
        print("Reads on the standby, summed over the Herald processes:")
        for (name, value) in totals.sorted(by: { $0.key < $1.key }) { print("  \(name) \(Int(value))") }
    }

    /// The channel, the template, the APNs key, and every user with a session and a device.
    func seed(_ client: SoakHTTP, deployment: SoakDeployment) async throws -> (sessions: [String: String], devices: [String: String]) {
        let admin = SoakDeployment.adminToken
        let credentials = TestCredentials.shared
        let setup: [(String, String)] = [
            ("/v1/channels/feed", #"{"kind":"feed","name":"Feed"}"#),
            ("/v1/templates/plain", #"{"name":"Plain","variables":[{"name":"title","type":"string","required":true}],"data":{"title":"{{title}}"}}"#),
            (
                "/v1/apns/credentials/main",
                SoakHTTP.json([
                    "type": "token", "environment": "sandbox", "topic": SoakDeployment.topic, "key": credentials.signingKeyPEM,
                    "key_id": credentials.keyID, "team_id": credentials.teamID,
                ])
            ),
        ]
        for (path, body) in setup {
            guard let (status, _) = await client.call("setup", .PUT, path, bearer: admin, body: body), (200..<300).contains(status) else {
                throw ValidationError("setting up \(path) failed: \(client.recorder.failures.last?.detail ?? "")")
            }
        }
        let names = (1...users).map { String(format: "u%05d", $0) }
        let made = try await withThrowingTaskGroup(of: (String, String, String).self) { group in
            var made: [(String, String, String)] = []
            for (index, name) in names.enumerated() {
                if index >= 16, let one = try await group.next() { made.append(one) }
                group.addTask {
                    _ = await client.call("setup", .PUT, "/v1/users/\(name)", bearer: admin, body: "{}")
                    guard let (_, json) = await client.call("setup", .POST, "/v1/users/\(name)/sessions", bearer: admin, body: "{}"),
                        let session = json["token"] as? String
                    else { throw ValidationError("no session for \(name): \(client.recorder.failures.last?.detail ?? "")") }
                    let device = String(format: "%064x", index + 1)
                    _ = await client.call(
                        "setup",
                        .PUT,
                        "/v1/me/devices/\(device)",
                        bearer: session,
                        body: SoakHTTP.json(["environment": "sandbox", "topic": SoakDeployment.topic])
                    )
                    return (name, session, device)
                }
            }
            for try await one in group { made.append(one) }
            return made
        }
        guard client.recorder.failures.isEmpty else {
            throw ValidationError("setting up users failed: \(client.recorder.failures.prefix(3).map(\.detail))")
        }
        print("Seeded \(users) users, each with a session and a device.")
        return (
            Dictionary(uniqueKeysWithValues: made.map { ($0.0, $0.1) }),
            Dictionary(uniqueKeysWithValues: made.map { ($0.0, $0.2) })
        )
    }
}
