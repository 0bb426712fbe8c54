import Foundation
import Postgres

/// CPU time spent, read from `/proc`: by this process (Herald's server, in-process in the bench), by the
/// PostgreSQL server (every process of its postmaster, live or already exited), and by the whole
/// machine. Differences of two readings divided by the requests served in between say where each
/// request's CPU went — what a rate alone cannot show on a machine the three share.
struct CPUMeter {
    /// The postmaster's pid; `nil` when the server is not on this machine (its backends are not ours
    /// to read).
    let postmaster: Int32?
    /// The process whose CPU counts as Herald's: this one, unless Herald runs as a process of its own.
    var herald: Int32 = getpid()

    struct Reading {
        /// Seconds of CPU (user + system).
        var herald: Double
        var postgres: Double?
        var machine: Double
        /// The server's processes at the time (its postmaster's children, still running or not yet reaped).
        var serverProcesses: Set<Int32>
    }

    /// Finds the server behind `client` by the parent of a backend.
    static func locate(_ client: PostgresClient) async -> CPUMeter {
        guard let backend = try? await client.query("SELECT pg_backend_pid()").first?.decode(Int32.self),
            let fields = statFields(of: backend), fields.count > 3, let parent = Int32(fields[3])
        else { return CPUMeter(postmaster: nil) }
        return CPUMeter(postmaster: parent)
    }

    /// A reading. Given an earlier reading, first waits (at most five seconds) until every server
    /// process born since has ended and been reaped — pgbench's backends, when its run is over — so
    /// that none is caught halfway between its own account and the postmaster's.
    func read(after earlier: Reading? = nil) async -> Reading {
        if let postmaster, let earlier {
            for _ in 0..<500 {
                if Self.children(of: postmaster).isSubset(of: earlier.serverProcesses) { break }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        return readNow()
    }

    private func readNow() -> Reading {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let herald = Self.statFields(of: self.herald).map { Self.ticks($0, 13, 14) } ?? 0
        var postgres: Double?
        var processes: Set<Int32> = []
        if let postmaster {
            // The children first: one reaped between the two reads is then counted twice, never lost
            // (`read(after:)` makes sure none is exiting).
            processes = Self.children(of: postmaster)
            var total = processes.reduce(0.0) { sum, child in sum + (Self.statFields(of: child).map { Self.ticks($0, 13, 14) } ?? 0) }
            if let own = Self.statFields(of: postmaster) {
                // Its own time and that of the children it has reaped (backends that ended).
                total += Self.ticks(own, 13, 14, 15, 16)
                postgres = total / ticks
            }
        }
        return Reading(herald: herald / ticks, postgres: postgres, machine: Self.machineBusyTicks() / ticks, serverProcesses: processes)
    }

    /// Microseconds of CPU per request between two readings.
    struct PerRequest {
        var herald: Double
        var postgres: Double?
        /// Everything else that ran: the load generator (wrk or pgbench), the kernel's share not billed
        /// to a process, other processes.
        var rest: Double
    }

    static func perRequest(from start: Reading, to end: Reading, requests: Double) -> PerRequest {
        let scale = 1e6 / max(requests, 1)
        let herald = (end.herald - start.herald) * scale
        var postgres: Double?
        if let before = start.postgres, let after = end.postgres { postgres = (after - before) * scale }
        let machine = (end.machine - start.machine) * scale
        return PerRequest(herald: herald, postgres: postgres, rest: max(0, machine - herald - (postgres ?? 0)))
    }

    // MARK: - /proc

    /// The fields of `/proc/<pid>/stat` after the command name (which may hold spaces), numbered from
    /// the state field as index 2 so that indexes match `proc(5)` minus one.
    private static func statFields(of pid: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        return ["", ""] + text[text.index(after: close)...].split(separator: " ")
    }

    private static func ticks(_ fields: [Substring], _ indexes: Int...) -> Double {
        indexes.reduce(0) { $0 + (fields.indices.contains($1) ? Double(fields[$1]) ?? 0 : 0) }
    }

    static func children(of parent: Int32) -> Set<Int32> {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return Set(
            entries.compactMap(Int32.init).filter { pid in
                statFields(of: pid).map { $0.count > 3 && Int32($0[3]) == parent } ?? false
            }
        )
    }

    /// Busy time of all CPUs: user, nice, system, irq, softirq (not idle, iowait, or steal: time the
    /// hypervisor gave to other guests ran nothing of ours).
    private static func machineBusyTicks() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return 0 }
        let values = line.split(separator: " ").dropFirst().map { Double($0) ?? 0 }
        guard values.count >= 8 else { return 0 }
        return values[0] + values[1] + values[2] + values[5] + values[6]
    }
}
