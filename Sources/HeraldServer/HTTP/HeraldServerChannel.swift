import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import Postgres
import ServiceLifecycle

/// Herald's HTTP/1.1 connections: Hummingbird's HTTP handling, plus the WebSocket upgrade of
/// `GET /v1/me/stream` done with NIO's typed upgrader.
///
/// Why not hummingbird-websocket's channel: it serves every socket from async tasks (the connection's,
/// a ping loop, the handler's), and their stacks cost every idle socket several times what its channel
/// does (docs/decisions/2026-11-22-websockets-served-by-channel-handlers.md). Here an upgraded connection is served by channel handlers alone
/// (`LiveChannelHandler`, NIOWebSocket's codec, an `IdleStateHandler`): the connection's task ends
/// with the upgrade, and an idle socket costs its channel and handlers.
///
/// An upgrade request that is refused (bad credentials, unknown device) is answered with the same JSON
/// error the router's route of that path gives a plain request.
struct HeraldServerChannel: ServerChildChannel, HTTPChannelHandler {
    enum Negotiated: Sendable {
        case stream
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// An upgrade request that was refused. NIO's upgrader has consumed the request by then, so
        /// the router never sees it: the error is answered here.
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, APIError)
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        /// Whether `negotiated` has completed (read and written on the channel's event loop).
        let decided: NIOLoopBoundBox<Bool>
        let channel: any Channel
    }

    let responder: Responder
    let streams: LiveController
    /// The database client, whose threads the connections' tasks run on (see `executor`).
    let client: PostgresClient?
    /// Closes a connection idle this long between requests, or before its first request's head is in.
    let idleTimeout: Duration
    /// The largest frame a client may send (it has nothing to send but control frames).
    static let maximumFrameSize = 1 << 14

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // The authenticated client, between the upgrade decision and the pipeline change (both on
            // this channel's event loop).
            let accepted = NIOLoopBoundBox<LiveClient?>(nil, eventLoop: channel.eventLoop)
            // Bound to the loop: the upgrade's callbacks are `@Sendable`, and all run on this loop.
            let parseErrors = NIOLoopBound(ParseErrorResponder(), eventLoop: channel.eventLoop)
            let headFilter = NIOLoopBound(RequestHeadFilter(), eventLoop: channel.eventLoop)
            let refusal = NIOLoopBoundBox<APIError?>(nil, eventLoop: channel.eventLoop)
            let streams = self.streams
            let upgrader = NIOTypedWebSocketServerUpgrader<Negotiated>(
                maxFrameSize: Self.maximumFrameSize,
                shouldUpgrade: { channel, head in
                    let (uri, authorization, device) = (head.uri, head.headers["Authorization"].first, head.headers["Herald-Device"].first)
                    let (origin, host) = (head.headers["Origin"].first, head.headers["Host"].first)
                    let address = channel.remoteAddress?.ipAddress
                    let promise = channel.eventLoop.makePromise(of: Result<LiveClient, APIError>.self)
                    promise.completeWithTask {
                        do {
                            return .success(
                                try await streams.authenticate(
                                    uri: uri,
                                    authorization: authorization,
                                    device: device,
                                    origin: origin,
                                    host: host,
                                    address: address
                                )
                            )
                        } catch let error as APIError {
                            return .failure(error)
                        } catch {
                            return .failure(.databaseUnavailable)
                        }
                    }
                    // Callbacks of the promise run on the channel's event loop.
                    return promise.futureResult.map { result in
                        switch result {
                        case .success(let client):
                            accepted.value = client
                            return HTTPHeaders()
                        case .failure(let error):
                            refusal.value = error
                            return nil
                        }
                    }
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        channel.pipeline.syncOperations.removeHandler(parseErrors.value, promise: nil)
                        channel.pipeline.syncOperations.removeHandler(headFilter.value, promise: nil)
                        guard let client = accepted.value, let hub = streams.hub else { throw StreamUpgradeError.notAccepted }
                        try hub.attach(client, to: channel)
                        return Negotiated.stream
                    }
                }
            )
            let upgradeConfiguration = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        channel.pipeline.syncOperations.removeHandler(parseErrors.value, promise: nil)
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandler(ParseErrorBodyWriter())
                        try channel.pipeline.syncOperations.addHandler(HTTPConnectionStateHandler(idleTimeout: idleTimeout, logger: logger))
                        let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true)
                        )
                        if let error = refusal.value { return Negotiated.refused(asyncChannel, error) }
                        return Negotiated.http(asyncChannel)
                    }
                }
            )
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Negotiated>(upgradeConfiguration: upgradeConfiguration)
            configuration.enablePipelining = false  // NIOAsyncChannel serves requests one at a time
            configuration.enableErrorHandling = false  // Hummingbird answers errors
            configuration.enableResponseHeaderValidation = false  // swift-http-types validates
            let negotiated = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            let upgradeHandler = try channel.pipeline.syncOperations.handler(type: NIOTypedHTTPServerUpgradeHandler<Negotiated>.self)
            try channel.pipeline.syncOperations.addHandler(headFilter.value, position: .before(upgradeHandler))
            try channel.pipeline.syncOperations.addHandler(parseErrors.value)
            // Until the upgrade is decided no handler watches the clock: a client that connects and
            // sends nothing (or a head a byte at a time) would hold the connection and its task forever.
            let deadline = channel.eventLoop.scheduleTask(in: TimeAmount(idleTimeout)) { channel.close(promise: nil) }
            let decided = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            negotiated.whenComplete { result in
                decided.value = true
                deadline.cancel()
                // A negotiation that failed leaves the connection to no one (`handle` only logs the
                // error): close it, or it stays open for as long as the client keeps it.
                if case .failure = result { channel.close(promise: nil) }
            }
            return Value(negotiated: negotiated, decided: decided, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            // Until its first request's head is in, nothing else closes a connection when the server
            // shuts down (Hummingbird's handling closes idle ones once it has them): one a client opened
            // and never used would hold the shutdown until the deadline above.
            let negotiated = try await withGracefulShutdownHandler {
                try await value.negotiated.get()
            } onGracefulShutdown: {
                let (channel, decided) = (value.channel, value.decided)
                channel.eventLoop.execute { if !decided.value { channel.close(promise: nil) } }
            }
            switch negotiated {
            case .stream:
                // The channel's handlers serve the stream from here on; no task stays behind.
                return
            case .http(let asyncChannel):
                await withTaskExecutorPreference(executor) {
                    await handleHTTP(asyncChannel: asyncChannel, logger: logger)
                }
            case .refused(let asyncChannel, let error):
                try await asyncChannel.executeThenClose { _, outbound in
                    let body = error.body
                    try await outbound.write(contentsOf: [.head(error.closingHead(bodyLength: body.readableBytes)), .body(body), .end(nil)])
                }
            }
        } catch {
            logger.debug("connection ended before its first request was handled", metadata: ["error": "\(error)"])
        }
    }
}

extension HeraldServerChannel {
    /// Where every HTTP request runs — the one place that decides it, for every route: on the
    /// database client's threads (`PostgresExecutor`). Nearly every request is a few statements, and a
    /// connection task living on those threads runs them, its handler and its response write in place,
    /// so the request hops from the event loop to a database thread and back and nowhere else; on
    /// Swift's cooperative pool it would hop there, on to a database thread for each statement and back
    /// again before writing. The executor keeps threads that never block in libpq, so a request that
    /// needs no database (`/healthz`) answers while every connection is busy. Without a client, the
    /// cooperative pool.
    var executor: (any TaskExecutor)? { client?.executor }
}

enum StreamUpgradeError: Error {
    case notAccepted
}
