import Logging
import Metrics
import Postgres
import ServiceLifecycle
import Synchronization

/// A hot standby that takes the sync reads off the primary (`HERALD_READ_DATABASE_URL`) while it is
/// up and close enough behind.
///
/// Every `probeInterval` it looks at both servers (see `probe()`): where the primary's WAL ends and
/// which transaction id it issues next, and whether the standby is still replaying and how far it has
/// come. Reads go to the standby while the last look found it replaying at most `maximumLag` behind;
/// otherwise — and from the moment a request finds it unreachable — to the primary, until a look finds
/// it fit again.
///
/// What the standby answers is never wrong, only possibly older: every answer that continues a sync
/// token compares the token with the standby's snapshot first (see `behind(_:)`), and a session the
/// standby does not know yet is checked on the primary. What lags is what the standby has not replayed:
/// a revoked session keeps reading there for as long as the standby trails, which is at most
/// `maximumLag` and one look.
public final class ReadReplica: Service, Sendable {
    /// The standby's pool.
    public let client: PostgresClient
    let primary: PostgresClient
    /// The most the standby may trail the primary and still take reads.
    public let maximumLag: Duration
    let probeInterval: Duration
    let logger: Logger
    let state = Mutex(State())
    let metrics = Metrics()

    public init(client: PostgresClient, primary: PostgresClient, maximumLag: Duration, probeInterval: Duration = .seconds(1), logger: Logger) {
        self.client = client
        self.primary = primary
        self.maximumLag = maximumLag
        self.probeInterval = probeInterval
        self.logger = logger
    }

    /// Whether the standby may take reads now, and if not, why.
    public enum Fitness: String, Sendable, Equatable {
        /// Not looked at yet: reads go to the primary until the first look.
        case unknown
        case fit
        /// Unreachable, or a read there failed.
        case down
        /// More than `maximumLag` behind.
        case lagging
        /// Not in recovery: promoted, or never a standby. Its data may have left the primary's history.
        case notStandby = "not_standby"
    }

    /// Why a read that could have gone to the standby went to the primary.
    public enum Fallback: String, Sendable, CaseIterable {
        case down, lagging, unknown
        case notStandby = "not_standby"
        /// The standby failed during the request: unreachable, a statement cancelled by replay, or it
        /// lacked what the primary has (a channel, a device).
        case failed
        /// The standby does not know the session (issued after what it has replayed).
        case unknownSession = "unknown_session"
        /// A sync token beyond the standby and beyond what the primary had issued at the last look.
        case tokenAhead = "token_ahead"
    }

    /// What the standby has done since start.
    public struct Statistics: Sendable, Equatable {
        /// Requests whose reads the standby answered.
        public var standbyReads = 0
        /// Requests that went to the primary although they could have read on the standby, by reason
        /// (the `reason` of `herald_read_fallbacks_total`).
        public var fallbacks: [String: Int] = [:]
        /// Syncs the standby answered "nothing new yet" because it had not replayed as far as the token.
        public var behindTokens = 0
        /// The lag at the last look; `nil` before the first or while the standby is down.
        public var lag: Duration?
        public var fitness = Fitness.unknown
    }

    struct State {
        var statistics = Statistics()
        var replay = ReplayLag()
        /// The primary's next transaction id at the last look: every token position below it was
        /// issued by this primary's history.
        var primaryNextXID: Int64 = 0
    }

    /// The Prometheus series (see docs/operations.md).
    struct Metrics: Sendable {
        let lag = Gauge(label: "herald_read_standby_lag_seconds")
        let fit = Gauge(label: "herald_read_standby_fit")
        let reads = Counter(label: "herald_read_standby_reads_total")
        let behind = Counter(label: "herald_read_standby_behind_total")
        let fallbacks = Dictionary(
            uniqueKeysWithValues: Fallback.allCases.map { ($0, Counter(label: "herald_read_fallbacks_total", dimensions: [("reason", $0.rawValue)])) }
        )
    }

    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// The standby, when it may take a request's reads now; `nil` (counted as a fallback) when the
    /// request must read on the primary.
    public func takeReads() -> ReadReplica? {
        let fitness = state.withLock { $0.statistics.fitness }
        guard fitness == .fit else {
            fellBack(Fallback(rawValue: fitness.rawValue) ?? .unknown)
            return nil
        }
        return self
    }

    /// A request's reads were answered by the standby.
    public func answered() {
        state.withLock { $0.statistics.standbyReads += 1 }
        metrics.reads.increment()
    }

    public func fellBack(_ reason: Fallback) {
        state.withLock { $0.statistics.fallbacks[reason.rawValue, default: 0] += 1 }
        metrics.fallbacks[reason]?.increment()
    }

    /// A read on the standby failed with `error`: a broken connection or an unreachable server takes
    /// the standby out of service until the next look finds it fit.
    public func failed(_ error: PostgresError) {
        fellBack(.failed)
        guard error.code == .connectionLost else { return }
        let was = state.withLock { state in
            defer { state.statistics.fitness = .down }
            return state.statistics.fitness
        }
        metrics.fit.record(0)
        if was != .down {
            logger.warning("the read standby failed; reads go to the primary", metadata: ["error": logger.describe(error)])
        }
    }

    /// Thrown by a read on the standby that the primary must answer instead (counted as a fallback
    /// where it was found).
    public struct Behind: Error {
        public init() {}
    }

    /// Called when the standby's snapshot has not reached `position`, the transaction id a sync token
    /// has seen through: it answers "nothing new yet" with the token unchanged, which is never wrong —
    /// unless the primary had not issued that id at the last look either (a token from a restored or
    /// foreign database, or issued in the last moment), which only the primary can judge: `Behind`.
    public func behind(_ position: Int64) throws {
        let issued = state.withLock { state in
            guard position < state.primaryNextXID else { return false }
            state.statistics.behindTokens += 1
            return true
        }
        guard issued else {
            fellBack(.tokenAhead)
            throw Behind()
        }
        metrics.behind.increment()
    }
}
