import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A webhook receiver on a loopback port (HTTP/1 through NIO's codec) that answers as the test
/// scripts it: a status, a hang, or a closed connection. It records every request it takes.
public final class WebhookReceiver: Sendable {
    /// How the receiver answers a request.
    public enum Behavior: Sendable, Equatable {
        case status(Int)
        /// Reads the request and never answers (the client's timeout ends it).
        case hang
        /// Closes the connection without answering.
        case close
    }

    /// A request as it arrived.
    public struct Request: Sendable {
        public var path: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
        /// What the receiver did with it.
        public var answer: Behavior

        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    private struct State {
        var script: [Behavior] = []
        var otherwise: Behavior = .status(200)
        var requests: [Request] = []
    }

    private let state = NIOLockedValueBox(State())
    private let channel: any Channel
    public let port: Int

    public var url: String { "http://127.0.0.1:\(port)/hooks" }

    private init(channel: any Channel, port: Int) {
        self.channel = channel
        self.port = port
    }

    public static func start() async throws -> WebhookReceiver {
        let box = NIOLockedValueBox<WebhookReceiver?>(nil)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMapThrowing {
                    try channel.pipeline.syncOperations.addHandler(Handler(receiver: { box.withLockedValue { $0 } }))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let receiver = WebhookReceiver(channel: channel, port: channel.localAddress?.port ?? 0)
        box.withLockedValue { $0 = receiver }
        return receiver
    }

    /// The next requests are answered with `behaviors` in turn, then with `otherwise`.
    public func script(_ behaviors: [Behavior], otherwise: Behavior = .status(200)) {
        state.withLockedValue {
            $0.script = behaviors
            $0.otherwise = otherwise
        }
    }

    public var requests: [Request] { state.withLockedValue { $0.requests } }

    /// Every event id in requests it answered 2xx, in order of arrival.
    public var acceptedEvents: [[String: Any]] {
        requests.filter { if case .status(let code) = $0.answer { return (200..<300).contains(code) } else { return false } }
            .flatMap { request -> [[String: Any]] in
                let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
                return object?["events"] as? [[String: Any]] ?? []
            }
    }

    public func shutdown() async {
        try? await channel.close()
    }

    fileprivate func take(_ request: Request) -> Behavior {
        state.withLockedValue { state in
            let behavior = state.script.isEmpty ? state.otherwise : state.script.removeFirst()
            var request = request
            request.answer = behavior
            state.requests.append(request)
            return behavior
        }
    }

    private final class Handler: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let receiver: @Sendable () -> WebhookReceiver?
        private let pending = NIOLockedValueBox<(head: HTTPRequestHead?, body: [UInt8])>((nil, []))

        init(receiver: @escaping @Sendable () -> WebhookReceiver?) {
            self.receiver = receiver
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                pending.withLockedValue { $0 = (head, []) }
            case .body(let buffer):
                pending.withLockedValue { $0.body += buffer.readableBytesView }
            case .end:
                let (head, body) = pending.withLockedValue { $0 }
                guard let head, let receiver = receiver() else { return }
                let behavior = receiver.take(
                    Request(path: head.uri, headers: head.headers.map { ($0.name, $0.value) }, body: body, answer: .status(0))
                )
                switch behavior {
                case .hang:
                    break
                case .close:
                    context.close(promise: nil)
                case .status(let code):
                    var headers = HTTPHeaders()
                    headers.add(name: "Content-Length", value: "2")
                    context.write(
                        wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .init(statusCode: code), headers: headers))),
                        promise: nil
                    )
                    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "ok")))), promise: nil)
                    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                }
            }
        }
    }
}
