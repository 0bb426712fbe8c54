import CSignalIO
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An event loop's signalfd: how the loop learns that a libpq socket it drives has something for it.
///
/// Each socket of a `LoopPipeline` queues a real-time signal to the loop's thread when it becomes
/// readable or writable (`CSignalIO`). The thread keeps those signals blocked, so they wait in its
/// signalfd, which NIO watches like any other descriptor. There is one per loop thread for the life of
/// the process, shared by the pipelines of every client on that loop: two signalfds of one thread
/// would race for the same signals. A signal makes every pipeline of the loop look at its socket
/// (usually there is one; a look at a quiet socket is a `recv` that finds nothing). A timer also
/// looks, every `watchdogInterval`, at the pipelines still waiting for answers, in case a signal ever
/// goes missing.
final class LoopSignals: @unchecked Sendable {
    let loop: any EventLoop
    /// The loop thread's kernel id, which sockets queue their signals to.
    private(set) var thread: CInt = 0
    /// The pipelines on this loop. Touched on the loop only.
    private var pipelines: [ObjectIdentifier: LoopPipeline] = [:]

    static let watchdogInterval = TimeAmount.milliseconds(100)

    private static let all = Mutex<[ObjectIdentifier: EventLoopPromise<LoopSignals>]>([:])

    private init(loop: any EventLoop) {
        self.loop = loop
    }

    /// The loop's signals, set up on first use. Fails where signal-driven I/O is not available.
    static func of(_ loop: any EventLoop) async throws -> LoopSignals {
        let (promise, isNew) = all.withLock { all -> (EventLoopPromise<LoopSignals>, Bool) in
            if let existing = all[ObjectIdentifier(loop)] { return (existing, false) }
            let promise = loop.makePromise(of: LoopSignals.self)
            all[ObjectIdentifier(loop)] = promise
            return (promise, true)
        }
        if isNew {
            do {
                promise.succeed(try await start(on: loop))
            } catch {
                all.withLock { $0[ObjectIdentifier(loop)] = nil }
                promise.fail(error)
            }
        }
        return try await promise.futureResult.get()
    }

    /// Blocks the signals on the loop's thread, then reads them from a signalfd on the loop.
    private static func start(on loop: any EventLoop) async throws -> LoopSignals {
        let signals = LoopSignals(loop: loop)
        let descriptor = try await loop.submit { () throws -> CInt in
            let blocked = herald_signal_io_block()
            guard blocked == 0 else { throw IOError(errnoCode: blocked, reason: "pthread_sigmask") }
            signals.thread = herald_signal_io_thread()
            let descriptor = herald_signal_io_descriptor()
            guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "signalfd") }
            return descriptor
        }.get()
        do {
            _ = try await NIOPipeBootstrap(group: loop)
                // A signalfd refuses reads with no room for a whole record.
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 32 * Int(herald_signal_io_record_size())))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(SignalHandler(signals: signals))
                    }
                }
                .takingOwnershipOfDescriptor(input: descriptor)
                .get()
        } catch {
            close(descriptor)
            throw error
        }
        loop.scheduleRepeatedTask(initialDelay: watchdogInterval, delay: watchdogInterval) { _ in
            for pipeline in signals.pipelines.values where pipeline.isWaiting { pipeline.serviceIO() }
        }
        return signals
    }

    /// Starts telling `pipeline` of its socket. On the loop.
    func add(_ pipeline: LoopPipeline) {
        pipelines[ObjectIdentifier(pipeline)] = pipeline
    }

    /// Stops telling `pipeline`. On the loop.
    func remove(_ pipeline: LoopPipeline) {
        pipelines[ObjectIdentifier(pipeline)] = nil
    }

    fileprivate func signalled() {
        for pipeline in pipelines.values { pipeline.serviceIO() }
    }
}

/// Every signal read from the signalfd means the same — a socket of this loop may have something —
/// so their contents are not looked at.
private final class SignalHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let signals: LoopSignals

    init(signals: LoopSignals) {
        self.signals = signals
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        signals.signalled()
    }
}
