import Foundation
import HeraldCore
import HeraldCrypto
import HeraldStore
import Logging
import Metrics
import Postgres
import ServiceLifecycle

/// Sends the pushes recorded in the outbox — silent refreshes and alerts — to every push service,
/// one claimed batch of devices at a time.
///
/// Each service has a lane of its own (a task, its own claims, its own transport and concurrency), so
/// a service that is down or slow holds back its own pushes only. Each round of a lane: expand new
/// outbox rows into per-device wants (any lane does, for every device), claim its service's due
/// devices (with a lease) in batches, send to them (the next batch is claimed and the previous one
/// recorded while a batch is in flight), and record every outcome (`PushResult`): delivered →
/// outstanding until the device syncs; gone → the device removed (unless registered again after the
/// service learned it was gone) and listed as a failure; a refused credential renewed → retried at
/// once; throttled → backoff from `throttleDelay`, or the service's `Retry-After`; transient (5xx,
/// timeouts, connections) → exponential backoff with jitter or `Retry-After`, up to
/// `maximumAttempts`, then listed; anything else → listed, never retried. Woken by `NOTIFY
/// herald_push`, lanes also poll, so other replicas' work, lapsed claims of a crashed dispatcher and
/// due retries are found.
public struct PushDispatcher: Service {
    /// One service's lane: its transport, and the signal that wakes it.
    final class Lane: Sendable {
        let transport: any PushServiceTransport
        let wake = WakeSignal()

        init(transport: any PushServiceTransport) {
            self.transport = transport
        }

        var service: PushService { transport.service }
    }

    let store: PushStore
    let lanes: [Lane]
    let settings: PushSettings
    let executor: PostgresExecutor
    /// Turns `NOTIFY herald_push` (sent by every transaction that writes the outbox) into wake-ups.
    let listener: PostgresListener?
    let logger: Logger

    /// A dispatcher for every push service over the stored credentials (what `herald serve` runs).
    public init(client: PostgresClient, box: SecretBox, settings: PushSettings, listener: PostgresListener?, logger: Logger) {
        self.init(
            client: client,
            transports: Self.transports(client: client, box: box, settings: settings, logger: logger),
            settings: settings,
            listener: listener,
            logger: logger
        )
    }

    /// A dispatcher with a lane per transport (one per service).
    public init(
        client: PostgresClient,
        transports: [any PushServiceTransport],
        settings: PushSettings,
        listener: PostgresListener?,
        logger: Logger
    ) {
        self.store = PushStore(client: client)
        self.lanes = transports.map(Lane.init)
        self.settings = settings
        self.executor = client.executor
        self.listener = listener
        self.logger = logger
    }

    /// A transport for each service: APNs, FCM and Web Push, over the stored credentials.
    public static func transports(client: PostgresClient, box: SecretBox, settings: PushSettings, logger: Logger) -> [any PushServiceTransport] {
        [
            APNsTransport(store: APNsCredentialStore(client: client, box: box), settings: settings, logger: logger),
            FCMTransport(store: FCMCredentialStore(client: client, box: box), settings: settings, logger: logger),
            WebPushTransport(store: SettingsStore(client: client), box: box, settings: settings, logger: logger),
        ]
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                if let listener {
                    group.addTask { await WakeSignal.signal(lanes.map(\.wake), onEventsOf: listener) }
                }
                await withDiscardingTaskGroup { running in
                    for lane in lanes {
                        running.addTask { await runLoop(lane) }
                    }
                }
                group.cancelAll()
            }
            await shutdownTransport()
        } onGracefulShutdown: {
            for lane in lanes { lane.wake.signal() }
        }
    }

    private func runLoop(_ lane: Lane) async {
        // Statement after statement: run where libpq runs.
        await withTaskExecutorPreference(executor) {
            var failures = 0
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                do {
                    let foundWork = try await runRound(lane)
                    failures = 0
                    if foundWork { continue }
                } catch {
                    failures += 1
                    logger.error(
                        "push round failed; retrying",
                        metadata: ["service": "\(lane.service.rawValue)", "error": logger.describe(error)]
                    )
                    try? await Task.sleep(for: FailureBackoff.delay(afterFailures: failures))
                    continue
                }
                await lane.wake.wait(timeout: settings.pollInterval)
            }
        }
    }

    /// Runs rounds until one finds nothing to do; returns how many found work. For tools and benchmarks.
    public func runUntilIdle() async throws -> Int {
        try await withTaskExecutorPreference(executor) {
            var rounds = 0
            while try await runRound() { rounds += 1 }
            return rounds
        }
    }

    /// Closes the transports' connections (after `runUntilIdle`; `run()` does it itself).
    public func shutdownTransport() async {
        for lane in lanes { await lane.transport.shutdown() }
    }

    /// One round of every lane, one after another; true when any found work.
    func runRound() async throws -> Bool {
        var foundWork = false
        for lane in lanes where try await runRound(lane) { foundWork = true }
        return foundWork
    }

    /// One round of a lane; true when it found work (so the next round starts at once).
    func runRound(_ lane: Lane) async throws -> Bool {
        try await lane.transport.refresh()
        let refreshes = try await runRefreshRound(lane)
        let alerts = try await runAlertRound(lane)
        return refreshes || alerts
    }

    /// Wakes the other lanes: an expansion made wants for every service's devices.
    func wakeOthers(than lane: Lane) {
        for other in lanes where other !== lane { other.wake.signal() }
    }

    /// Claimed batches of refreshes one round sends at most, so alerts are not held back behind a long
    /// refresh backlog.
    static let refreshBatchesPerRound = 8

    private func runRefreshRound(_ lane: Lane) async throws -> Bool {
        let (claims, foundWork) = try await expandAndClaim(lane)
        guard !claims.isEmpty else { return foundWork }
        // Pipelined: while one batch is in flight, the previous one's outcomes are recorded, the
        // outbox expanded further and the next batch claimed, so the database and the service are
        // busy at the same time.
        var batch = claims
        var sent: [(DeviceClaim, PushResult)] = []
        for round in 1...Self.refreshBatchesPerRound {
            let previous = sent
            async let next = prepareNext(lane, recording: previous, claim: round < Self.refreshBatchesPerRound)
            sent = try await deliver(batch, lane: lane)
            batch = try await next
            if batch.isEmpty { break }
        }
        try await record(sent, lane: lane)
        return true
    }

    private func claimTerms(_ lane: Lane) -> ClaimTerms {
        ClaimTerms(service: lane.service, lease: settings.lease, minimumInterval: settings.minimumInterval, policy: settings.multiDevice)
    }

    /// The next batch: devices the outbox's next slice (`batchSize` users) makes want a refresh,
    /// claimed in the same statement — more than `batchSize` when users have several devices —
    /// topped up with other due devices (retries, lapsed claims, wants left by streams).
    private func expandAndClaim(_ lane: Lane) async throws -> (claims: [DeviceClaim], foundWork: Bool) {
        let terms = claimTerms(lane)
        let expanded = try await store.expandOutbox(atLeast: settings.batchSize, claiming: terms)
        if expanded.foundWork { wakeOthers(than: lane) }
        var claims = expanded.claims
        if claims.count < settings.batchSize {
            claims += try await store.claimDue(limit: settings.batchSize - claims.count, terms: terms)
        }
        return (claims, expanded.foundWork || !claims.isEmpty)
    }

    private func prepareNext(_ lane: Lane, recording previous: [(DeviceClaim, PushResult)], claim: Bool) async throws -> [DeviceClaim] {
        try await record(previous, lane: lane)
        guard claim else { return [] }
        return try await expandAndClaim(lane).claims
    }

    /// Sends the messages through the lane's transport (which bounds how many are in flight) and
    /// counts their outcomes and durations in the metrics (`kind`: refresh or alert).
    func sendAll<Claim: Sendable>(_ messages: [(Claim, PushMessage)], kind: String, lane: Lane) async -> [(Claim, PushResult)] {
        // Off the database's threads, where the lane runs: encryption and HTTP are no libpq work.
        let transport = lane.transport
        let outgoing = messages.map(\.1)
        let results = await withTaskExecutorPreference(globalConcurrentExecutor) { await transport.send(outgoing) }
        let service = lane.service.rawValue
        let timer = Timer(label: "herald_push_duration_seconds", dimensions: [("service", service), ("kind", kind)])
        for (result, elapsed) in results {
            // Latency of answered requests only: a push that never reached its service has none.
            if result.status != nil { timer.record(duration: elapsed) }
            Counter(label: "herald_pushes_total", dimensions: [("service", service), ("kind", kind), ("outcome", result.outcome.rawValue)])
                .increment()
        }
        return zip(messages, results).map { ($0.0, $1.result) }
    }

    /// Sends refreshes to the claimed devices; returns each one's outcome.
    private func deliver(_ claims: [DeviceClaim], lane: Lane) async throws -> [(DeviceClaim, PushResult)] {
        let summaries = try await store.refreshSummaries(userKeys: Array(Set(claims.map(\.userKey))))
        let expiration = Int64(Date().timeIntervalSince1970) + settings.expiration.components.seconds
        return await sendAll(
            claims.map { claim in
                let content = PushMessage.Content.refresh(channels: summaries[claim.userKey] ?? [], notificationID: claim.notificationID)
                return (claim, PushMessage(address: claim.address, userKey: claim.userKey, content: content, expiration: expiration))
            },
            kind: "refresh",
            lane: lane
        )
    }

    /// Records the outcomes of one sent batch.
    private func record(_ results: [(DeviceClaim, PushResult)], lane: Lane) async throws {
        guard !results.isEmpty else { return }
        // Deliveries first, in one statement: if recording a failure below fails, the delivered
        // devices are not pushed again when their claims lapse.
        try await store.recordDelivered(results.filter { $0.1.outcome == .delivered }.map(\.0))
        try await recordUndelivered(
            results,
            kind: "refresh",
            service: lane.service,
            attempts: \.attempts,
            retry: { try await store.recordRetry($0, after: $1) },
            fail: { try await store.recordFailure($0, status: $1, reason: $2, removeToken: $3, invalidSince: $4) }
        )
    }

    /// Handles every answer but a delivery: a gone device is a failure that removes it; a renewed
    /// credential is retried at once; throttling backs off from `throttleDelay`, 5xx and connection
    /// trouble from `retryDelay`, doubling with jitter — or waits the service's `Retry-After` — until
    /// `maximumAttempts`; anything else is a failure never retried.
    func recordUndelivered<Claim: Sendable>(
        _ results: [(Claim, PushResult)],
        kind: String,
        service: PushService,
        attempts: KeyPath<Claim, Int>,
        retry: (Claim, Duration) async throws -> Void,
        fail: (Claim, _ status: Int?, _ reason: String, _ removeToken: Bool, _ invalidSince: Date?) async throws -> Void
    ) async throws {
        for (claim, result) in results where result.outcome != .delivered {
            let attempt = claim[keyPath: attempts]
            func retryOrGiveUp(_ delay: Duration) async throws {
                if attempt >= settings.maximumAttempts {
                    try await fail(claim, result.status, "\(result.reason ?? "failed") (gave up after \(attempt) attempts)", false, nil)
                } else {
                    try await retry(claim, delay)
                }
            }
            switch result.outcome {
            case .delivered:
                break
            case .gone:
                try await fail(claim, result.status, result.reason ?? "the device is gone", true, result.goneSince)
            case .retryNow:
                try await retryOrGiveUp(.zero)
            case .throttled:
                try await retryOrGiveUp(retryDelay(result, base: settings.throttleDelay, attempt: attempt))
            case .transient:
                try await retryOrGiveUp(retryDelay(result, base: settings.retryDelay, attempt: attempt))
            case .permanent:
                try await fail(claim, result.status, result.reason ?? "refused", false, nil)
            }
            logger.notice(
                "\(kind) push not delivered",
                metadata: [
                    "service": "\(service.rawValue)", "outcome": "\(result.outcome.rawValue)",
                    "status": "\(result.status.map(String.init) ?? "-")", "reason": "\(result.reason ?? "")", "attempt": "\(attempt)",
                ]
            )
        }
    }

    /// The wait before retrying: the service's `Retry-After` when it gave one (within the cap), else
    /// a backoff from `base`.
    private func retryDelay(_ result: PushResult, base: Duration, attempt: Int) -> Duration {
        if let retryAfter = result.retryAfter { return min(retryAfter, settings.maximumRetryDelay) }
        return Self.backoff(base, attempt: attempt, cap: settings.maximumRetryDelay)
    }

    /// `base × 2^(attempt−1)`, capped, with ±20 % jitter so devices that failed together do not retry together.
    static func backoff(_ base: Duration, attempt: Int, cap: Duration) -> Duration {
        let exponential = base * (1 << min(max(attempt - 1, 0), 20))
        let capped = min(exponential, cap)
        return capped * Double.random(in: 0.8...1.2)
    }
}
