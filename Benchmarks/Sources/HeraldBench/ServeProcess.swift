import ArgumentParser
import Foundation
import HeraldTesting

#if canImport(Glibc)
import Glibc
#endif

/// `herald serve` as a process of its own on a loopback port, for the cases that measure the server
/// apart from the load this process generates (its memory, its own CPU).
struct ServeProcess {
    let process: HeraldProcess
    let port: Int

    /// Starts `herald serve` (the binary beside this one, the `sql/` directory in the working directory)
    /// against `conninfo` on `port` (0: any free one), and waits until it listens.
    static func start(
        conninfo: String,
        adminToken: String,
        environment: [String: String] = [:],
        launcher: [String] = [],
        port: Int = 0
    ) async throws -> ServeProcess {
        let process = try HeraldProcess(
            arguments: ["serve", "--port", String(port), "--sql-dir", FileManager.default.currentDirectoryPath + "/sql"],
            environment: [
                "DATABASE_URL": conninfo, "HERALD_ADMIN_TOKEN": adminToken, "HERALD_LOG_LEVEL": "warning",
                "HERALD_SECRET_KEY": String(repeating: "0", count: 64),
            ].merging(environment) { $1 },
            launcher: launcher
        )
        do {
            let line = try await process.waitForLine(containing: "Herald listening on")
            guard let port = line.split(separator: ":").last.flatMap({ Int($0) }) else { throw ValidationError("no port in '\(line)'") }
            return ServeProcess(process: process, port: port)
        } catch {
            process.signal(SIGKILL)
            throw error
        }
    }

    /// `NAME=VALUE` entries (a case's `--server-env`) as an environment.
    static func environment(_ entries: [String]) -> [String: String] {
        Dictionary(
            entries.map { entry -> (String, String) in
                let parts = entry.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
            }
        ) { $1 }
    }

    /// `VmRSS` of the process, in kB.
    static func residentKilobytes(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// `VmRSS` of the process, in MB.
    static func residentMegabytes(_ pid: pid_t) -> Int { residentKilobytes(pid) / 1024 }
}
