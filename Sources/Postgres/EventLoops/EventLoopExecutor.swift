import NIOCore

/// A Swift `TaskExecutor` that runs its jobs on one NIO event loop (NIO's loops offer a
/// `SerialExecutor` only). A task that prefers it calls `PostgresClient.pipelinedQueries` on the loop,
/// and is resumed by the loop itself when the loop's own connection answers: it goes on at once, with
/// no thread woken.
public final class EventLoopExecutor: TaskExecutor {
    public let loop: any EventLoop

    public init(loop: any EventLoop) {
        self.loop = loop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
