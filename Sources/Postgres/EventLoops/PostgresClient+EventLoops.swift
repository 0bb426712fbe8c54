import Logging
import NIOCore
import NIOPosix
import Synchronization

extension PostgresClient {
    /// Gives event loops of `group` a connection of their own for `pipelinedQueries`, so that a
    /// request served on one of them runs its pipelined statements without leaving the loop (see
    /// `LoopPipeline`). Each takes one of the pool's connections for as long as the client runs, so at
    /// most half the pool goes to loops; the other loops, and every other call, use the pool as before.
    /// Returns the number of loops set up: none where the platform cannot (outside Linux), or when
    /// called again.
    @discardableResult
    public func startEventLoopPipelines(on group: any EventLoopGroup) async -> Int {
        #if os(Linux)
        guard !hasLoopPipelines.exchange(true, ordering: .acquiringAndReleasing) else { return 0 }
        var started: [ObjectIdentifier: LoopPipeline] = [:]
        for loop in group.makeIterator().prefix(configuration.maximumConnections / 2) {
            do {
                started[ObjectIdentifier(loop)] = try await LoopPipeline.start(on: loop, client: self, logger: logger)
            } catch {
                logger.warning("an event loop runs pipelined statements through the pool", metadata: ["error": "\(error)"])
            }
        }
        loopPipelines.withLock { $0 = started }
        return started.count
        #else
        return 0
        #endif
    }

    /// True when `loop` has a connection of its own (`startEventLoopPipelines(on:)`).
    public func hasEventLoopPipeline(on loop: any EventLoop) -> Bool {
        hasLoopPipelines.load(ordering: .relaxed) && loopPipelines.withLock { $0[ObjectIdentifier(loop)] != nil }
    }

    /// The calling event loop's pipeline, if it has one.
    func currentLoopPipeline() -> LoopPipeline? {
        guard hasLoopPipelines.load(ordering: .relaxed), let loop = MultiThreadedEventLoopGroup.currentEventLoop else { return nil }
        return loopPipelines.withLock { $0[ObjectIdentifier(loop)] }
    }

    /// Callers answered on event loops so far (for tests and diagnostics).
    public var eventLoopPipelineCallers: Int {
        get async {
            var total = 0
            for pipeline in loopPipelines.withLock({ Array($0.values) }) {
                total += (try? await pipeline.loop.submit { pipeline.callersServed }.get()) ?? 0
            }
            return total
        }
    }

    /// Gives the loops' connections back (at shutdown, before the pool waits for its leases).
    func stopEventLoopPipelines() async {
        let pipelines = loopPipelines.withLock { pipelines in
            defer { pipelines.removeAll() }
            return Array(pipelines.values)
        }
        for pipeline in pipelines { await pipeline.stop() }
    }
}
