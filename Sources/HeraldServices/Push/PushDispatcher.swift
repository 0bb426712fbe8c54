import APNs
import Foundation
import HeraldCore
import HeraldStore
import Logging
import Metrics
import Postgres
import ServiceLifecycle

/// Sends the silent refresh pushes recorded in the outbox, one claimed batch of devices at a time.
///
/// Each round: expand new outbox rows into per-device wants, claim due devices (with a lease) in
/// batches, send to them (the next batch is claimed and the previous one recorded while a batch is in
/// flight), record every outcome as Apple documents the answers of APNs: delivered → outstanding until the
/// device syncs; dead token → removed (unless re-registered after a 410's timestamp) and listed as a
/// failure; refused provider token → retried at once with a new one; 429 → per-token backoff; 5xx,
/// timeouts and connection failures → exponential backoff with jitter, up to `maximumAttempts`, then
/// listed; anything else → listed, never retried. Woken by `wake` (a LISTEN/NOTIFY hint), it also
/// polls, so other replicas' work, lapsed claims of a crashed dispatcher and due retries are found.
public struct PushDispatcher: Service {
    let store: PushStore
    let transport: PushTransport
    let settings: PushSettings
    let wake: WakeSignal
    let executor: PostgresExecutor
    /// Turns `NOTIFY herald_push` (sent by every transaction that writes the outbox) into wake-ups.
    let listener: PostgresListener?
    let logger: Logger

    /// A dispatcher with its own transport over the stored credentials (what `herald serve` runs, and
    /// what benchmarks drive with `runUntilIdle`).
    public init(client: PostgresClient, box: SecretBox, settings: PushSettings, listener: PostgresListener?, logger: Logger) {
        let transport = PushTransport(store: APNsCredentialStore(client: client, box: box), settings: settings, logger: logger)
        self.init(client: client, transport: transport, settings: settings, wake: WakeSignal(), listener: listener, logger: logger)
    }

    public init(
        client: PostgresClient,
        transport: PushTransport,
        settings: PushSettings,
        wake: WakeSignal,
        listener: PostgresListener?,
        logger: Logger
    ) {
        self.store = PushStore(client: client)
        self.transport = transport
        self.settings = settings
        self.wake = wake
        self.executor = client.executor
        self.listener = listener
        self.logger = logger
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                if let listener {
                    group.addTask { await wake.signal(onEventsOf: listener) }
                }
                await runLoop()
                group.cancelAll()
            }
            await transport.shutdown()
        } onGracefulShutdown: {
            wake.signal()
        }
    }

    private func runLoop() async {
        // Statement after statement: run where libpq runs.
        await withTaskExecutorPreference(executor) {
            var failures = 0
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                do {
                    let foundWork = try await runRound()
                    failures = 0
                    if foundWork { continue }
                } catch {
                    failures += 1
                    logger.error("push round failed; retrying", metadata: ["error": logger.describe(error)])
                    try? await Task.sleep(for: FailureBackoff.delay(afterFailures: failures))
                    continue
                }
                await wake.wait(timeout: settings.pollInterval)
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

    /// Closes the transport's connections (after `runUntilIdle`; `run()` does it itself).
    public func shutdownTransport() async {
        await transport.shutdown()
    }

    /// One round; true when it found work (so the next round starts at once).
    func runRound() async throws -> Bool {
        try await transport.refresh()
        let refreshes = try await runRefreshRound()
        let alerts = try await runAlertRound()
        return refreshes || alerts
    }

    /// Claimed batches of refreshes one round sends at most, so alerts are not held back behind a long
    /// refresh backlog.
    static let refreshBatchesPerRound = 8

    private func runRefreshRound() async throws -> Bool {
        let (claims, foundWork) = try await expandAndClaim()
        guard !claims.isEmpty else { return foundWork }
        // Pipelined: while one batch is in flight, the previous one's outcomes are recorded, the
        // outbox expanded further and the next batch claimed, so the database and APNs are busy at
        // the same time.
        var batch = claims
        var sent: [(DeviceClaim, APNsResult)] = []
        for round in 1...Self.refreshBatchesPerRound {
            let previous = sent
            async let next = prepareNext(recording: previous, claim: round < Self.refreshBatchesPerRound)
            sent = try await deliver(batch)
            batch = try await next
            if batch.isEmpty { break }
        }
        try await record(sent)
        return true
    }

    private var claimTerms: ClaimTerms {
        ClaimTerms(lease: settings.lease, minimumInterval: settings.minimumInterval, policy: settings.multiDevice)
    }

    /// The next batch: devices the outbox's next slice (`batchSize` users) makes want a refresh,
    /// claimed in the same statement — more than `batchSize` when users have several devices —
    /// topped up with other due devices (retries, lapsed claims, wants left by streams).
    private func expandAndClaim() async throws -> (claims: [DeviceClaim], foundWork: Bool) {
        let expanded = try await store.expandOutbox(atLeast: settings.batchSize, claiming: claimTerms)
        var claims = expanded.claims
        if claims.count < settings.batchSize {
            claims += try await store.claimDue(limit: settings.batchSize - claims.count, terms: claimTerms)
        }
        return (claims, expanded.foundWork || !claims.isEmpty)
    }

    private func prepareNext(recording previous: [(DeviceClaim, APNsResult)], claim: Bool) async throws -> [DeviceClaim] {
        try await record(previous)
        guard claim else { return [] }
        return try await expandAndClaim().claims
    }

    /// Sends the pushes (the APNs client bounds how many are in flight) and counts their outcomes and
    /// durations in the metrics (`kind`: refresh or alert).
    func sendAll<Claim: Sendable>(_ pushes: [(Claim, APNsPush, environment: String)], kind: String) async -> [(Claim, APNsResult)] {
        let results = await transport.send(pushes.map { ($0.1, $0.environment) })
        let timer = Timer(label: "herald_push_duration_seconds", dimensions: [("kind", kind)])
        for (result, elapsed) in results {
            // Latency of answered requests only: a push that never reached APNs has none.
            if result.status != nil { timer.record(duration: elapsed) }
            Counter(label: "herald_push_results_total", dimensions: [("kind", kind), ("outcome", "\(result.outcome)")]).increment()
        }
        return zip(pushes, results).map { ($0.0, $1.result) }
    }

    /// Sends refreshes to the claimed devices; returns each one's outcome.
    private func deliver(_ claims: [DeviceClaim]) async throws -> [(DeviceClaim, APNsResult)] {
        let summaries = try await store.refreshSummaries(userKeys: Array(Set(claims.map(\.userKey))))
        let expiration = Int64(Date().timeIntervalSince1970) + settings.expiration.components.seconds
        return await sendAll(
            claims.map { claim in
                let push = Self.refreshPush(
                    token: claim.token,
                    topic: claim.topic,
                    userKey: claim.userKey,
                    channels: summaries[claim.userKey] ?? [],
                    notificationID: claim.notificationID,
                    expiration: expiration
                )
                return (claim, push, claim.environment)
            },
            kind: "refresh"
        )
    }

    /// Records the outcomes of one sent batch.
    private func record(_ results: [(DeviceClaim, APNsResult)]) async throws {
        guard !results.isEmpty else { return }
        // Deliveries first, in one statement: if recording a failure below fails, the delivered
        // devices are not pushed again when their claims lapse.
        try await store.recordDelivered(results.filter { $0.1.outcome == .delivered }.map(\.0))
        try await recordUndelivered(
            results,
            kind: "refresh",
            attempts: \.attempts,
            retry: { try await store.recordRetry($0, after: $1) },
            fail: { try await store.recordFailure($0, status: $1, reason: $2, removeToken: $3, invalidSince: $4) }
        )
    }

    /// Handles every answer but a delivery as Apple documents APNs's answers: a dead token is a failure that
    /// removes it; a refused provider token is retried at once (the client already dropped it); 429
    /// backs off from `throttleDelay`, 5xx and connection trouble from `retryDelay`, doubling with
    /// jitter, until `maximumAttempts`; anything else is a failure never retried.
    func recordUndelivered<Claim: Sendable>(
        _ results: [(Claim, APNsResult)],
        kind: String,
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
            case .invalidToken:
                let since = result.timestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) }
                try await fail(claim, result.status, result.reason ?? "invalid token", true, since)
            case .providerTokenRejected:
                try await retryOrGiveUp(.zero)
            case .throttled:
                try await retryOrGiveUp(Self.backoff(settings.throttleDelay, attempt: attempt, cap: settings.maximumRetryDelay))
            case .transient:
                try await retryOrGiveUp(Self.backoff(settings.retryDelay, attempt: attempt, cap: settings.maximumRetryDelay))
            case .permanent:
                try await fail(claim, result.status, result.reason ?? "refused", false, nil)
            }
            logger.notice(
                "\(kind) push not delivered",
                metadata: [
                    "outcome": "\(result.outcome)", "status": "\(result.status.map(String.init) ?? "-")", "reason": "\(result.reason ?? "")",
                    "attempt": "\(attempt)",
                ]
            )
        }
    }

    /// The silent refresh push for one device of a user: background, priority 5, collapsed per user,
    /// naming the user's channels with their unread counts and the badge.
    public static func refreshPush(
        token: String,
        topic: String,
        userKey: Int64,
        channels: [(url: String, unread: Int64)],
        notificationID: Int64? = nil,
        expiration: Int64
    ) -> APNsPush {
        APNsPush(
            deviceToken: token,
            topic: topic,
            pushType: "background",
            priority: 5,
            expiration: expiration,
            collapseID: "herald-refresh-\(userKey)",
            payload: RefreshPayload.make(channels: channels, badge: channels.reduce(0) { $0 + $1.unread }, notificationID: notificationID)
        )
    }

    /// `base × 2^(attempt−1)`, capped, with ±20 % jitter so devices that failed together do not retry together.
    static func backoff(_ base: Duration, attempt: Int, cap: Duration) -> Duration {
        let exponential = base * (1 << min(max(attempt - 1, 0), 20))
        let capped = min(exponential, cap)
        return capped * Double.random(in: 0.8...1.2)
    }
}
