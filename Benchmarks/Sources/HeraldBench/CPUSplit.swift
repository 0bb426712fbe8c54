import ArgumentParser
import ChildProcess
import Foundation

/// `herald-bench sync --split-cpus`: the bench process — Herald's server — on CPU 0 alone; PostgreSQL,
/// `wrk` and `pgbench` on the other CPUs.
///
/// On a machine whose cores are shared, a rate compares whole-machine costs: every microsecond Herald
/// spends is one PostgreSQL cannot. Deployed, Herald and its database run on machines (or cores) of
/// their own, and the question is whether Herald can keep its database busy. Splitting the cores
/// asks that here: pgbench measures what the database's CPUs can do, and Herald, on a CPU of its own,
/// shows how much of that it draws out.
///
/// Pinning goes through util-linux's `taskset` (glibc's `sched_setaffinity` needs `_GNU_SOURCE`, which
/// Swift's Glibc module does not define). Threads and processes started later inherit their creator's
/// CPUs; backends that existed before are pinned again before every measurement.
struct CPUSplit {
    /// The bench process's CPU.
    let server = "0"
    /// Everything else: `1` on a two-CPU machine, `1-3` on four.
    let rest: String

    static let taskset = "/usr/bin/taskset"

    init() throws {
        let online = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        guard online >= 2 else { throw ValidationError("--split-cpus needs at least two CPUs; this machine has \(online)") }
        guard FileManager.default.isExecutableFile(atPath: Self.taskset) else {
            throw ValidationError("--split-cpus needs \(Self.taskset) (apt-get install util-linux)")
        }
        rest = online == 2 ? "1" : "1-\(online - 1)"
    }

    /// The words to put before a load generator's command line.
    var loadPrefix: [String] { [Self.taskset, "-c", rest] }

    /// Moves every thread of this process to the server's CPU.
    func pinSelf() throws {
        try pin(getpid(), to: server)
    }

    /// Moves the PostgreSQL server — its postmaster and every process it has started — to the other CPUs.
    func pinDatabase(postmaster: Int32, children: Set<Int32>) throws {
        for pid in [postmaster] + children.sorted() {
            // A backend may end between the listing and here; only the postmaster must succeed.
            do { try pin(pid, to: rest) } catch  where pid != postmaster {}
        }
    }

    private func pin(_ pid: Int32, to cpus: String) throws {
        let output = NSTemporaryDirectory() + "herald-bench-taskset-\(getpid()).out"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let status = try ChildProcess.run([Self.taskset, "-a", "-p", "-c", cpus, "\(pid)"], environment: ["LC_ALL=C"], outputPath: output)
        guard status == 0 else {
            throw ValidationError(
                "taskset could not move process \(pid) to CPUs \(cpus): \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")"
            )
        }
    }

    /// One line for the report.
    var description: String {
        "CPUs split: Herald's server (this process, and the paced client) on CPU \(server); PostgreSQL, wrk and pgbench on CPU \(rest)."
    }
}
