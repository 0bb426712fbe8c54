import CLibPQ
import Foundation
import Logging
import Synchronization

/// What a `PostgresListener` reports.
public enum PostgresListenerEvent: Sendable, Equatable {
    /// `LISTEN` is in effect on a fresh connection (served by `backendPID`). Seen once at start and again
    /// after every reconnect: notifications sent while disconnected are lost, so a consumer that uses
    /// them as wake-up hints should poll for work when it sees this.
    case listening(backendPID: Int32)
    /// The connection was lost (a reconnect follows): notifications sent from now until the next
    /// `.listening` are lost.
    case disconnected
    case notification(PostgresNotification)
}

/// Subscribes to `NOTIFY` channels on a dedicated connection and yields what arrives.
///
/// The connection lives on its own thread, which waits on the socket with `poll(2)` and so never blocks
/// an event loop or the cooperative pool. When the connection drops, the thread reconnects with
/// backoff and issues `LISTEN` again before reporting `.listening`.
public struct PostgresListener: Sendable {
    public var conninfo: String
    public var channels: [String]
    public var applicationName: String
    var logger: Logger

    public init(
        conninfo: String,
        channels: [String],
        applicationName: String = "herald-listener",
        logger: Logger = Logger(label: "herald.postgres.listener")
    ) {
        self.conninfo = conninfo
        self.channels = channels
        self.applicationName = applicationName
        self.logger = logger
    }

    /// Starts listening. Iterating the stream receives events; dropping or cancelling the iteration
    /// stops the thread and closes the connection.
    ///
    /// `observer`, when given, sees every event first, on the listener's thread, as it arrives: for
    /// bookkeeping that must never lag behind or lose an event (the stream drops the oldest events
    /// beyond its buffer when its consumer falls behind). It must return quickly.
    public func events(observer: (@Sendable (PostgresListenerEvent) -> Void)? = nil) -> AsyncStream<PostgresListenerEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: PostgresListenerEvent.self,
            bufferingPolicy: .bufferingNewest(10_000)
        )
        let stop = StopFlag()
        continuation.onTermination = { _ in stop.set() }
        let loop = ListenLoop(listener: self, continuation: continuation, observer: observer, stop: stop)
        let thread = Thread { loop.run() }
        thread.name = "herald-pg-listen"
        thread.start()
        return stream
    }
}

private final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}

/// The body of the listener thread.
private struct ListenLoop: Sendable {
    let listener: PostgresListener
    let continuation: AsyncStream<PostgresListenerEvent>.Continuation
    let observer: (@Sendable (PostgresListenerEvent) -> Void)?
    let stop: StopFlag

    private func deliver(_ event: PostgresListenerEvent) {
        observer?(event)
        continuation.yield(event)
    }

    /// How long one `poll(2)` waits, which bounds how late a stop request is noticed.
    static let pollMilliseconds: Int32 = 200

    func run() {
        var backoffMilliseconds = 50
        while !stop.isSet {
            do {
                let connection = try subscribe()
                backoffMilliseconds = 50
                deliver(.listening(backendPID: connection.backendPID))
                do {
                    try pump(connection)
                } catch {
                    connection.close()
                    deliver(.disconnected)
                    throw error
                }
                connection.close()
            } catch {
                listener.logger.warning(
                    "LISTEN connection lost; reconnecting",
                    metadata: ["error": listener.logger.describe(error), "retry_ms": "\(backoffMilliseconds)"]
                )
                waitOrStop(milliseconds: backoffMilliseconds)
                backoffMilliseconds = min(backoffMilliseconds * 2, 5_000)
            }
        }
        continuation.finish()
    }

    private func subscribe() throws -> LibPQConnection {
        let connection = try LibPQConnection.connect(
            conninfo: listener.conninfo,
            applicationName: listener.applicationName
        )
        do {
            for channel in listener.channels {
                _ = try connection.execute(PostgresQuery(unsafeSQL: "LISTEN \(try connection.escapeIdentifier(channel))"))
            }
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    /// Delivers notifications until stopped (returns) or the connection breaks (throws).
    private func pump(_ connection: LibPQConnection) throws {
        while !stop.isSet {
            var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Self.pollMilliseconds)
            if ready < 0 && errno != EINTR {
                throw PostgresError(code: .connectionLost, serverMessage: "poll failed: errno \(errno)")
            }
            guard ready > 0 else { continue }
            for notification in try connection.drainNotifications() {
                deliver(.notification(notification))
            }
            if !connection.isOpen {
                throw PostgresError(code: .connectionLost, serverMessage: "the server closed the connection")
            }
        }
    }

    private func waitOrStop(milliseconds: Int) {
        var remaining = milliseconds
        while remaining > 0 && !stop.isSet {
            let step = min(remaining, Int(Self.pollMilliseconds))
            usleep(UInt32(step) * 1_000)
            remaining -= step
        }
    }
}
