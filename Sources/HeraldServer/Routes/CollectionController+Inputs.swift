import HeraldCore
import HeraldStore
import Hummingbird

extension CollectionController {
    /// A collection request, read once: a first load (no token) or an incremental poll. A poll with a
    /// token this server signed sends the poll itself with the session check; the token's user key is
    /// one this server issued, and the answer is used only if the session is that user's. A first load
    /// sends its channel lookup.
    struct CollectionInput: RouteInput {
        var url: String
        var limit: Int
        /// The category and status asked for (`?category=`, `?status=`).
        var filter: CollectionFilter
        var device: DeviceReference?
        /// How long a quiet poll may wait for a change (`?wait=`, seconds); zero answers at once.
        var wait: Duration
        /// The sync token key.
        var key: [UInt8]
        /// What the request's `token` parameter holds.
        var token: Token

        enum Token: Sendable {
            /// No token: a first load.
            case none
            /// A token that does not parse, is forged, or is another kind: the poll is not live.
            case invalid
            /// A token this server signed, and its text as presented (what a quiet answer gives back).
            case valid(SyncToken, presented: String)
        }

        enum Answer: Sendable {
            case poll(CollectionStore.Poll?)
            case channel(CollectionChannel?)
        }

        init(parsing request: Request, context: HeraldRequestContext, tokenKey: () async throws -> [UInt8]) async throws {
            let query = request.uri.queryParameters
            limit = try CollectionController.limit(query)
            filter = try CollectionController.filter(query)
            wait = try CollectionController.wait(query)
            key = try await tokenKey()
            device = try DeviceNaming.reference(in: request)
            url = try CollectionController.channelURL(context)
            if let text = query["token"] {
                let text = String(text)
                token = SyncToken(decoding: text, key: key).map { .valid($0, presented: text) } ?? .invalid
            } else {
                token = .none
            }
        }

        /// The poll of `token` for `userKey`.
        func poll(_ token: SyncToken?, userKey: Int64) -> CollectionStore.PollRequest {
            CollectionStore.PollRequest(
                userKey: userKey,
                channelURL: url,
                filter: filter,
                after: token?.position ?? .through(xid: 0),
                limit: token == nil ? 0 : limit + 1
            )
        }

        var companion: SessionCompanion<Answer>? {
            switch token {
            case .none: return CollectionStore.channelCompanion(url).map(Answer.channel)
            case .invalid: return nil
            case .valid(let token, _): return CollectionStore.pollCompanion(poll(token, userKey: token.userKey)).map(Answer.poll)
            }
        }
    }

    /// A request about one channel of the user's (older pages, marks): its channel lookup goes with
    /// the session check; it reads nothing of any user's, so any live session may use its answer.
    struct ChannelInput: RouteInput {
        var url: String

        init(parsing request: Request, context: HeraldRequestContext) throws {
            url = try CollectionController.channelURL(context)
        }

        var companion: SessionCompanion<CollectionChannel?>? { CollectionStore.channelCompanion(url) }
    }
}
