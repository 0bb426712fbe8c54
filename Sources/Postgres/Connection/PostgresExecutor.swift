import DequeModule
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Dedicated threads for blocking libpq calls, which double as a Swift `TaskExecutor`.
///
/// libpq blocks its caller, so its calls must never run on an event loop or on Swift's cooperative
/// pool. The obvious fix, sending each call to a thread pool and resuming the caller afterwards, costs
/// two thread hand-offs per statement. This executor also accepts whole tasks: a task that runs with
/// `withTaskExecutorPreference(client.executor)` (or `Task(executorPreference:)`) lives on these
/// threads, and its statements then call libpq in place with no hand-off at all. Tasks that do not opt
/// in hop here for each call and back, as with any thread pool.
///
/// Blocking here cannot starve the pool into a deadlock: the pool has more threads than connections,
/// and a thread only blocks inside libpq while holding a connection (or opening one in its place), so
/// whenever a task is ready to continue, at least one thread is not blocked.
public final class PostgresExecutor: TaskExecutor, @unchecked Sendable {
    private enum Work {
        case job(UnownedJob)
        case closure(@Sendable () -> Void)
    }

    private let condition = NSCondition()
    private var queue = Deque<Work>()
    private var isStopping = false
    private var running = 0
    private let threadCount: Int

    /// Marks the threads that belong to an executor (the value is the executor's address).
    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Starts `threadCount` threads named `name-1`, `name-2`, ….
    public init(threadCount: Int, name: String) {
        precondition(threadCount > 0)
        self.threadCount = threadCount
        for index in 1...threadCount {
            // Named from inside: Foundation's `Thread.name` does not reach the kernel here, and the
            // threads would otherwise show up in `top`/`perf` under their creator's name.
            let threadName = "\(name)-\(index)"
            let thread = Thread { [self] in
                Self.nameCurrentThread(threadName)
                work()
            }
            thread.start()
        }
    }

    /// Sets the kernel's name of the calling thread (at most 15 bytes). Glibc's `pthread_setname_np`
    /// is not visible to Swift without `_GNU_SOURCE`, so this writes `/proc/thread-self/comm`.
    private static func nameCurrentThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }

    /// True when the calling thread is one of this executor's.
    public var isCurrentThread: Bool {
        pthread_getspecific(Self.threadKey) == Unmanaged.passUnretained(self).toOpaque()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        condition.lock()
        if isStopping {
            condition.unlock()
            // Stopped: a task that still prefers this executor must run somewhere. Only tasks that no
            // longer have a connection can get here, so nothing blocking follows.
            globalConcurrentExecutor.enqueue(job)
            return
        }
        queue.append(.job(UnownedJob(job)))
        condition.unlock()
        // After unlocking: a thread woken while we still held the lock would go straight back to
        // sleep on the lock, and our unlock would have to wake it a second time.
        condition.signal()
    }

    /// Runs `body` on one of the threads (in place when already on one) and returns its result.
    public func run<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        if isCurrentThread { return try body() }
        return try await withTaskExecutorPreference(self) {
            if isCurrentThread { return try body() }
            // The runtime kept us elsewhere (for example on an actor): hand the call over explicitly.
            return try await withCheckedThrowingContinuation { continuation in
                submit { continuation.resume(with: Result(catching: body)) }
            }
        }
    }

    /// Runs `body` on one of the threads, or right here if the executor has stopped.
    public func submit(_ body: @escaping @Sendable () -> Void) {
        condition.lock()
        if isStopping {
            condition.unlock()
            body()
            return
        }
        queue.append(.closure(body))
        condition.unlock()
        condition.signal()
    }

    /// Lets the threads finish what is queued and exit. Later work runs elsewhere (see `enqueue`).
    public func shutdown() {
        condition.lock()
        isStopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        pthread_setspecific(Self.threadKey, Unmanaged.passUnretained(self).toOpaque())
        while true {
            condition.lock()
            while queue.isEmpty && !isStopping {
                condition.wait()
            }
            guard let next = queue.popFirst() else {
                condition.unlock()
                return
            }
            condition.unlock()
            switch next {
            case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
            case .closure(let body): body()
            }
        }
    }
}
