import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// A live stream (`GET /v1/me/stream`) opened by a test, with its events read one by one.
///
/// Built on Hummingbird's WebSocket client: the test reads events with `next`, and `close()` does the
/// close handshake and waits for the connection to end.
public final class TestStream: Sendable {
    private let messages: AsyncStream<String>
    private let outbound = NIOLockedValueBox<WebSocketOutboundWriter?>(nil)
    private let task: Task<WebSocketCloseFrame?, any Error>

    /// Connects and waits for the `ready` event (after which the stream's device counts as online).
    public static func open(
        port: Int,
        session: String,
        device: String? = nil,
        origin: String? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> TestStream {
        var url = "ws://127.0.0.1:\(port)/v1/me/stream"
        if let device { url += "?device=\(device)" }
        var headers = HTTPFields()
        headers[.authorization] = "Bearer \(session)"
        // As a browser's page sends it.
        if let origin { headers[.origin] = origin }
        let stream = TestStream(url: url, headers: headers)
        let ready = try await stream.next(type: "ready", timeout: timeout)
        guard ready["connection_id"] is String else { throw HeraldProcessError(message: "ready without connection_id: \(ready)") }
        return stream
    }

    private init(url: String, headers: HTTPFields) {
        let (messages, continuation) = AsyncStream.makeStream(of: String.self)
        self.messages = messages
        let outbound = self.outbound
        task = Task {
            defer { continuation.finish() }
            return try await WebSocketClient.connect(
                url: url,
                configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers, autoPing: .disabled),
                logger: Logger(label: "test.stream")
            ) { inbound, writer, _ in
                outbound.withLockedValue { $0 = writer }
                for try await message in inbound.messages(maxSize: 1 << 22) {
                    if case .text(let text) = message { continuation.yield(text) }
                }
            }
        }
    }

    /// The next event, as a JSON object; fails after `timeout` or when the stream ends first.
    public func next(timeout: Duration = .seconds(30), what: String = "a stream event") async throws -> [String: any Sendable] {
        let messages = self.messages
        let text = try await withTimeout(timeout, what: what) {
            for await message in messages { return message }
            throw HeraldProcessError(message: "the stream ended")
        }
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: any Sendable] else {
            throw HeraldProcessError(message: "not a JSON object: \(text)")
        }
        return object
    }

    /// The next event of `type`, skipping others.
    public func next(type: String, timeout: Duration = .seconds(30)) async throws -> [String: any Sendable] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let event = try await next(timeout: deadline - ContinuousClock.now, what: "a '\(type)' event")
            if event["type"] as? String == type { return event }
        }
    }

    /// Every event until the server closes the stream, and the close code and reason it sent.
    public func drainUntilClosed(timeout: Duration = .seconds(30)) async throws -> (events: [String], code: UInt16?, reason: String?) {
        let (messages, task) = (self.messages, self.task)
        return try await withTimeout(timeout, what: "the stream to close") {
            var events: [String] = []
            for await message in messages { events.append(message) }
            // Past the deadline the connection is dropped, so that it does not outlive the test.
            let frame = try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
            return (events, frame.map { UInt16(webSocketErrorCode: $0.closeCode) }, frame?.reason)
        }
    }

    /// Closes the stream normally and waits until the connection has ended (dropping it after 30 s).
    public func close() async {
        let (writer, task) = (outbound.withLockedValue { $0 }, self.task)
        _ = try? await withTimeout(.seconds(30), what: "the stream to end") {
            try await withTaskCancellationHandler {
                try? await writer?.close(.normalClosure, reason: nil)
                return try await task.value
            } onCancel: {
                task.cancel()
            }
        }
    }
}
