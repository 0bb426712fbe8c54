import Foundation

/// One WebSocket connection, from the upgrade to the close: the live stream's only contact with the
/// network, so that it runs the same on every platform.
///
/// On Apple platforms it is `URLSessionWebSocketTask`. On Linux, FoundationNetworking has no WebSocket
/// (its libcurl is built without one), so it is swift-websocket's NIO client there; an app on iOS or
/// macOS never builds that.
protocol WebSocketTransport: Sendable {
    /// Opens `url` with `headers`, calls `onText` for each text message in order, and returns when the
    /// connection ends: the close code the server sent, or `nil` when it just went away. Throws when
    /// the connection could not be made (the upgrade was refused, the server is down). Cancelling the
    /// calling task closes the connection.
    func run(url: URL, headers: [String: String], pingInterval: Duration, onText: @escaping @Sendable (String) async -> Void) async throws -> Int?
}

#if canImport(Darwin)
/// `URLSessionWebSocketTask`: pings on the interval and closes the connection when a pong is late
/// (`Heartbeat`); the task answers the server's pings itself.
struct URLSessionWebSocketTransport: WebSocketTransport {
    func run(url: URL, headers: [String: String], pingInterval: Duration, onText: @escaping @Sendable (String) async -> Void) async throws -> Int? {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let task = URLSession.shared.webSocketTask(with: request)
        // As large as the Linux transport's limit: a larger message would fail `receive`.
        task.maximumMessageSize = 1 << 22
        // Set before this side closes the task, whose `closeCode` is then its own, not the server's.
        let closedHere = LockedFlag()
        task.resume()
        return try await withTaskCancellationHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        try await Heartbeat.run(every: pingInterval) {
                            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                                task.sendPing { error in
                                    if let error { continuation.resume(throwing: error) } else { continuation.resume() }
                                }
                            }
                        }
                    } catch is CancellationError {
                    } catch {
                        // No pong in time, or the ping failed: closing the task ends `receive` below.
                        closedHere.set()
                        task.cancel(with: .goingAway, reason: nil)
                    }
                }
                defer { group.cancelAll() }
                do {
                    while true {
                        switch try await task.receive() {
                        case .string(let text): await onText(text)
                        case .data: continue
                        @unknown default: continue
                        }
                    }
                } catch {
                    // The server's close ends `receive` with an error; its code tells why.
                    if task.closeCode != .invalid, !closedHere.isSet { return task.closeCode.rawValue }
                    throw error
                }
            }
        } onCancel: {
            closedHere.set()
            task.cancel(with: .goingAway, reason: nil)
        }
    }
}
#else
import HTTPTypes
import Logging
import NIOWebSocket
import WSClient

/// swift-websocket's client (NIO), for Linux: pings on the interval and closes the connection when a
/// pong has not come by the next ping (its auto-ping); answers the server's pings.
struct NIOWebSocketTransport: WebSocketTransport {
    func run(url: URL, headers: [String: String], pingInterval: Duration, onText: @escaping @Sendable (String) async -> Void) async throws -> Int? {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let field = HTTPField.Name(name) { fields[field] = value }
        }
        let configuration = WebSocketClientConfiguration(
            maxFrameSize: 1 << 20,
            additionalHeaders: fields,
            autoPing: .enabled(timePeriod: pingInterval)
        )
        let closed = try await WebSocketClient.connect(
            url: url.absoluteString,
            configuration: configuration,
            logger: Logger(label: "herald.client.stream")
        ) { inbound, _, _ in
            for try await message in inbound.messages(maxSize: 1 << 22) {
                if case .text(let text) = message { await onText(text) }
            }
        }
        return closed.map { Self.number(of: $0.closeCode) }
    }

    static func number(of code: WebSocketErrorCode) -> Int {
        switch code {
        case .normalClosure: return 1000
        case .goingAway: return 1001
        case .protocolError: return 1002
        case .unacceptableData: return 1003
        case .dataInconsistentWithMessage: return 1007
        case .policyViolation: return 1008
        case .messageTooLarge: return 1009
        case .missingExtension: return 1010
        case .unexpectedServerError: return 1011
        case .unknown(let number): return Int(number)
        }
    }
}
#endif
