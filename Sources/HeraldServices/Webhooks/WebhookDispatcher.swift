import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldStore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Postgres
import ServiceLifecycle
import Synchronization

/// How webhooks are delivered.
public struct WebhookSettings: Sendable {
    /// How long one request may take before it counts as failed (and is retried).
    public var timeout: Duration = .seconds(10)
    /// How long a claim holds; a dispatcher that dies mid-request lets its claims lapse after it.
    public var lease: Duration = .seconds(60)
    /// Requests in flight at once (to any webhooks).
    public var concurrency = 4
    /// Requests in flight at once to one webhook: a slow or hanging receiver holds at most this many of
    /// the `concurrency` slots, so the other webhooks' events keep going out.
    public var concurrencyPerWebhook = 2
    /// A webhook whose attempts have all failed for this long is paused.
    public var pauseAfter: Duration = .seconds(24 * 3600)
    /// How often to look for due deliveries without a wake-up (retries coming due, other replicas).
    public var pollInterval: Duration = .seconds(1)

    public init() {}
}

/// Posts webhook events from the outbox (`WebhookStore`): claims a webhook's due deliveries a batch at
/// a time, posts them as one signed request (`{"events":[…]}` with `Herald-Signature`), and records
/// the outcome — delivered, retried with backoff, or a dead letter. At least once: a crash after the
/// receiver answered and before the outcome was recorded posts the batch again once the lease lapses,
/// so receivers deduplicate by event id. Replicas share the work (`SKIP LOCKED`).
public struct WebhookDispatcher: Service {
    let store: WebhookStore
    let settings: WebhookSettings
    let wake: WakeSignal
    let listener: PostgresListener?
    let executor: PostgresExecutor
    let logger: Logger

    public init(client: PostgresClient, box: SecretBox, settings: WebhookSettings, listener: PostgresListener?, logger: Logger) {
        self.store = WebhookStore(client: client, box: box)
        self.settings = settings
        self.wake = WakeSignal()
        self.listener = listener
        self.executor = client.executor
        self.logger = logger
    }

    public func run() async throws {
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: Self.clientConfiguration(settings))
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                if let listener {
                    group.addTask { await wake.signal(onEventsOf: listener) }
                }
                await runLoop(http)
                group.cancelAll()
            }
        } onGracefulShutdown: {
            wake.signal()
        }
        try? await http.shutdown()
    }

    static func clientConfiguration(_ settings: WebhookSettings) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: timeAmount(settings.timeout))
        configuration.redirectConfiguration = .disallow
        return configuration
    }

    private func runLoop(_ http: HTTPClient) async {
        let delivered = Counter(label: "herald_webhook_events_total", dimensions: [("outcome", "delivered")])
        let retried = Counter(label: "herald_webhook_events_total", dimensions: [("outcome", "retried")])
        let refused = Counter(label: "herald_webhook_events_total", dimensions: [("outcome", "refused")])
        let inFlight = RequestCount()
        await withDiscardingTaskGroup { requests in
            var failures = 0
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                // A finished request signals `wake`: at the limit, wait for one.
                if inFlight.total >= settings.concurrency {
                    await wake.wait(timeout: settings.pollInterval)
                    continue
                }
                do {
                    guard
                        let batch = try await withTaskExecutorPreference(
                            executor,
                            operation: {
                                try await store.claim(lease: settings.lease, excluding: inFlight.saturated(at: settings.concurrencyPerWebhook))
                            }
                        )
                    else {
                        failures = 0
                        await wake.wait(timeout: settings.pollInterval)
                        continue
                    }
                    failures = 0
                    inFlight.add(1, to: batch.webhook)
                    requests.addTask {
                        let outcome = await Self.post(batch, with: http, timeout: settings.timeout)
                        switch outcome {
                        case .delivered: delivered.increment(by: batch.events.count)
                        case .retry: retried.increment(by: batch.events.count)
                        case .refused: refused.increment(by: batch.events.count)
                        }
                        do {
                            try await withTaskExecutorPreference(executor) {
                                try await store.record(outcome, for: batch, pauseAfter: settings.pauseAfter)
                            }
                        } catch {
                            // The claim lapses and the batch is posted again: at least once.
                            logger.error("recording a webhook delivery failed", metadata: ["error": logger.describe(error)])
                        }
                        inFlight.add(-1, to: batch.webhook)
                        wake.signal()
                    }
                } catch {
                    failures += 1
                    logger.error("claiming webhook deliveries failed; retrying", metadata: ["error": logger.describe(error)])
                    try? await Task.sleep(for: FailureBackoff.delay(afterFailures: failures))
                }
            }
        }
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    /// Posts the batch; what came of it.
    static func post(_ batch: WebhookBatch, with http: HTTPClient, timeout: Duration) async -> WebhookOutcome {
        var body: [UInt8] = Array(#"{"events":["#.utf8)
        for (index, event) in batch.events.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: event.json.utf8)
        }
        body.append(contentsOf: "]}".utf8)
        var request = HTTPClientRequest(url: batch.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Herald-Webhooks")
        request.headers.add(
            name: WebhookSignature.headerName,
            value: WebhookSignature.header(secret: batch.secret, timestamp: Int(Date().timeIntervalSince1970), body: body)
        )
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await http.execute(request, timeout: Self.timeAmount(timeout))
            // The answer's start, for the failure list; the rest is read and dropped.
            var start: [UInt8] = []
            for try await part in response.body where start.count < 200 { start += part.readableBytesView.prefix(200 - start.count) }
            let text = String(decoding: start, as: UTF8.self)
            let status = Int(response.status.code)
            switch status {
            case 200..<300: return .delivered
            case 408, 429, 500...: return .retry(status: status, error: "HTTP \(status): \(text)")
            default: return .refused(status: status, error: "HTTP \(status): \(text)")
            }
        } catch {
            return .retry(status: nil, error: String(describing: error))
        }
    }
}

/// Requests a dispatcher has in flight, per webhook, shared with the tasks that make them.
private final class RequestCount: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    var total: Int { counts.withLock { $0.values.reduce(0, +) } }

    /// The webhooks with at least `limit` requests in flight.
    func saturated(at limit: Int) -> [String] {
        counts.withLock { counts in counts.filter { $0.value >= limit }.map(\.key).sorted() }
    }

    func add(_ amount: Int, to webhook: String) {
        counts.withLock { counts in
            let count = counts[webhook, default: 0] + amount
            counts[webhook] = count > 0 ? count : nil
        }
    }
}
