import HeraldStore
import Logging
import Metrics
import Postgres
import ServiceLifecycle
import Synchronization

extension ReadReplica {
    /// Looks at both servers every `probeInterval` until graceful shutdown.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.probe()
                try? await Task.sleep(for: self.probeInterval)
            }
        }
    }

    /// One look: the primary's WAL end and next transaction id, then the standby's recovery state and
    /// replay position (in that order, so the lag is never understated), and from them the fitness.
    func probe() async {
        let clock = ContinuousClock()
        do {
            let (end, nextXID) = try await ReplicationStore(client: primary).primaryPosition()
            let now = clock.now
            state.withLock { state in
                state.replay.primary(endedAt: end, at: now)
                state.primaryNextXID = max(state.primaryNextXID, nextXID)
            }
        } catch {
            // Without a new sample the lag still grows from the last one; reads are the standby's to
            // answer while the primary is away.
            logger.debug("the read probe could not reach the primary", metadata: ["error": logger.describe(error)])
        }
        let fitness: Fitness
        var lag: Duration?
        do {
            let (recovering, replayed) = try await ReplicationStore(client: client).standbyPosition()
            let now = clock.now
            let behind = state.withLock { $0.replay.standby(replayed: replayed, at: now) }
            lag = behind
            fitness = !recovering ? .notStandby : behind > maximumLag ? .lagging : .fit
        } catch {
            fitness = .down
        }
        let was = state.withLock { state in
            defer {
                state.statistics.fitness = fitness
                state.statistics.lag = lag
            }
            return state.statistics.fitness
        }
        metrics.fit.record(fitness == .fit ? 1 : 0)
        if let lag { metrics.lag.record(Double(lag.components.seconds) + Double(lag.components.attoseconds) / 1e18) }
        guard was != fitness else { return }
        switch fitness {
        case .fit: logger.info("the read standby takes reads", metadata: ["lag": "\(lag ?? .zero)"])
        case .lagging: logger.warning("the read standby is too far behind; reads go to the primary", metadata: ["lag": "\(lag ?? .zero)"])
        case .down: logger.warning("the read standby is unreachable; reads go to the primary")
        case .notStandby: logger.error("the read database is not a standby (not in recovery); reads go to the primary")
        case .unknown: break
        }
    }
}
