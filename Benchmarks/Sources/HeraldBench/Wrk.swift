import ArgumentParser
import ChildProcess
import Foundation

/// Runs `wrk` (a C load generator: one epoll thread, keep-alive connections) against the bench server,
/// with a Lua script that sends each request to a random one of a fixed list of (path, session) pairs.
///
/// The Swift client (AsyncHTTPClient) costs about as much CPU per request as the server it measures;
/// on a two-core machine that halves what the server can show. `wrk` is to HTTP what `pgbench` is to
/// the database, so the two rates compare like with like.
enum Wrk {
    struct Result {
        var rate: Double
        var p50: Double
        var p99: Double
        /// Answers that were not 2xx (counted only when the run accepts them).
        var refused = 0
    }

    /// The `wrk` on the PATH, or nil (`apt-get install wrk`).
    static func path() -> String? {
        ["/usr/bin/wrk", "/usr/local/bin/wrk"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// `clients` connections for `seconds`, each sending its next request as soon as the last answer is in.
    /// Fails if any answer is not a 2xx. `prefix` goes before the command line (`taskset -c 1`).
    static func run(
        port: Int,
        requests: [(path: String, session: String)],
        clients: Int,
        seconds: Int,
        prefix: [String] = [],
        acceptRefusals: Bool = false
    ) async throws -> Result {
        guard let wrk = path() else { throw ValidationError("wrk not found: apt-get install wrk") }
        let base = NSTemporaryDirectory() + "herald-bench-wrk-\(getpid())"
        let scriptPath = base + ".lua"
        let outputPath = base + ".out"
        try script(requests).write(toFile: scriptPath, atomically: true, encoding: .utf8)
        try? FileManager.default.removeItem(atPath: outputPath)
        defer {
            try? FileManager.default.removeItem(atPath: scriptPath)
            try? FileManager.default.removeItem(atPath: outputPath)
        }
        // One thread drives every connection, as one pgbench thread per client would barely be busy.
        let arguments =
            prefix + [
                wrk, "-t", "1", "-c", "\(clients)", "-d", "\(seconds)s", "--latency", "--timeout", "10s", "-s", scriptPath,
                "http://127.0.0.1:\(port)",
            ]
        // waitpid blocks: wait on a thread of its own, never on the cooperative pool the server shares.
        let status = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            Thread {
                continuation.resume(
                    with: Swift.Result(catching: {
                        try ChildProcess.run(arguments, environment: ["PATH=/usr/bin:/bin", "LC_ALL=C"], outputPath: outputPath)
                    })
                )
            }.start()
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0, let result = parse(text, acceptRefusals: acceptRefusals) else { throw ValidationError("wrk failed:\n\(text)") }
        return result
    }

    /// Reads the rate and the 50th/99th latency percentiles from wrk's `--latency` report; nil when a
    /// socket error occurred, or an answer was not a 2xx and `acceptRefusals` is false.
    static func parse(_ text: String, acceptRefusals: Bool = false) -> Result? {
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let refusals = lines.first { $0.hasPrefix("Non-2xx or 3xx responses:") }
        if lines.contains(where: { $0.hasPrefix("Socket errors:") }) || (refusals != nil && !acceptRefusals) { return nil }
        func value(_ prefix: String) -> Substring? {
            lines.first { $0.hasPrefix(prefix) }.flatMap { $0.dropFirst(prefix.count).split(separator: " ").first }
        }
        guard let rate = value("Requests/sec:").flatMap({ Double($0) }),
            let p50 = value("50%").flatMap(milliseconds), let p99 = value("99%").flatMap(milliseconds)
        else { return nil }
        let refused = refusals.flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") } ?? 0
        return Result(rate: rate, p50: p50, p99: p99, refused: refused)
    }

    /// wrk prints durations as `812.00us`, `1.23ms` or `1.05s`.
    private static func milliseconds(_ text: Substring) -> Double? {
        for (unit, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(unit) {
            return Double(text.dropLast(unit.count)).map { $0 * scale }
        }
        return nil
    }

    /// The requests are formatted once, up front, so the script costs one table lookup per request.
    private static func script(_ requests: [(path: String, session: String)]) -> String {
        var lines = ["local requests = {"]
        for request in requests {
            lines.append("  wrk.format(\"GET\", \"\(request.path)\", { [\"Authorization\"] = \"Bearer \(request.session)\" }),")
        }
        lines.append("}")
        lines.append("local count = #requests")
        lines.append("local next = math.random(count)")
        lines.append("request = function()")
        lines.append("  next = next % count + 1")
        lines.append("  return requests[next]")
        lines.append("end")
        return lines.joined(separator: "\n") + "\n"
    }
}
