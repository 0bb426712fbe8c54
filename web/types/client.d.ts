/**
 * A signed-in user's view of Herald in a web page: their collections, channel list and unread
 * counts, kept current by the live stream while it is open and by syncs when the page comes back
 * into view or online.
 *
 * Events (`addEventListener`):
 * - `unread` — the unread counts changed (`client.unread`).
 * - `connection` — the stream's state changed (`client.connectionState`: `disconnected`,
 *   `connecting`, `connected`, `waiting`, `failed`).
 * - `sessionrefused` — the server refused the session and `fetchSessionToken` gave no new one; the
 *   stream stops until `connect()` is called again.
 * - `error` — a refresh the client started by itself failed (`detail`: the error).
 */
export class HeraldClient extends EventTarget {
    /**
     * @param {import("./types.js").HeraldClientOptions} options
     */
    constructor(options: import("./types.js").HeraldClientOptions);
    /** The requests (exposed for what the client does not wrap). */
    api: HeraldAPI;
    /** The device this page is, by its id (a Web Push subscription's), named on syncs and the stream. */
    device: string | null;
    WebSocket: {
        new (url: string | URL, protocols?: string | string[] | undefined): WebSocket;
        prototype: WebSocket;
        readonly CLOSED: number;
        readonly CLOSING: number;
        readonly CONNECTING: number;
        readonly OPEN: number;
    };
    pageSize: number;
    reconnect: {
        initial: number;
        maximum: number;
    };
    rateLimitRetries: number;
    /** Where collections are kept between page loads, if anywhere. */
    cache: import("./cache.js").HeraldCache | null;
    /** @type {Set<string>} Collections whose writes to the cache are waiting to start. */
    savesDue: Set<string>;
    /** The user's total unread count (the badge) and each channel's. */
    unread: {
        total: number;
        channels: Record<string, number>;
    };
    /** @type {"disconnected" | "connecting" | "connected" | "waiting" | "failed"} */
    connectionState: "disconnected" | "connecting" | "connected" | "waiting" | "failed";
    /** The user's channel list. */
    channels: ChannelList;
    /** @type {Map<string, NotificationCollection>} */
    collections: Map<string, NotificationCollection>;
    /** @type {Map<string, bigint>} The position each channel's unread count is from. */
    unreadPositions: Map<string, bigint>;
    closed: boolean;
    wantsStream: boolean;
    /** @type {Promise<void> | null} */
    stream: Promise<void> | null;
    generation: number;
    /** @type {WebSocket | null} */
    socket: WebSocket | null;
    /** @type {(() => void) | null} Ends the wait before the next reconnection at once. */
    wakeReconnect: (() => void) | null;
    /** @type {Set<() => void>} Ends the stream's other waits (`pause`) when it is closed. */
    pauses: Set<() => void>;
    /** Counts the sockets that closed: work for one socket stops once it has. */
    sockets: number;
    /** @type {(() => void) | null} Stops listening to the service worker (`enablePush`). */
    stopFollowingWorker: (() => void) | null;
    /**
     * The collection of `channelURL` (of one `category`, if given, and of one inbox `status`: by
     * default everything not archived): one object per channel, category and status, kept current
     * while the client holds it. Call `refresh()` on it to load it.
     * @param {string} channelURL
     * @param {{category?: string | null, status?: import("./types.js").InboxStatus}} options
     */
    collection(channelURL: string, { category, status }?: {
        category?: string | null;
        status?: import("./types.js").InboxStatus;
    }): NotificationCollection;
    /**
     * Refreshes every collection held, the channel list and the unread counts; resolves to whether
     * anything changed.
     */
    refreshAll(): Promise<boolean>;
    /** Asks for the unread counts; a count held from a newer position (a mark, an event) stays. */
    refreshUnread(): Promise<void>;
    /**
     * The badge of a collection answer read at `horizon`: taken unless a count held is newer.
     * @param {number} badge
     * @param {bigint} horizon
     */
    noteBadge(badge: number, horizon: bigint): void;
    /**
     * A channel's unread count from an event or an answer, unless a later change already gave one.
     * @param {number} count
     * @param {string} url
     * @param {bigint} position
     */
    noteUnread(count: number, url: string, position: bigint): void;
    /**
     * @param {number} total
     * @param {Record<string, number>} channels
     */
    setUnread(total: number, channels: Record<string, number>): void;
    /**
     * Opens the live stream: events are applied to the collections and the channel list as they
     * happen, and while it is open Herald sends this device no pushes. A dropped connection is opened
     * again after an exponential backoff with jitter (at once when the browser comes back online);
     * every opening syncs what the client holds, since events may have been missed in between.
     */
    connect(): void;
    /** Closes the live stream; resolves once it is closed. */
    disconnect(): Promise<void>;
    startStream(): void;
    /** @param {number} generation */
    runStream(generation: number): Promise<void>;
    /**
     * One connection: resolves when it closes, saying whether it said `ready` and its close code.
     * @param {string} token
     * @param {number} generation
     * @returns {Promise<{opened: boolean, code: number}>}
     */
    openSocket(token: string, generation: number): Promise<{
        opened: boolean;
        code: number;
    }>;
    /**
     * Applies one stream event (the stream is the fast path; syncs stay the truth).
     * @param {any} event
     */
    apply(event: any): void;
    /**
     * Syncs everything once the stream is ready, and again, less and less often, while a collection's
     * answers stop below the ready's `position`: an answer is held back below any transaction still
     * open in the database cluster, so a change committed just before the stream was ready may be in
     * no answer yet, and it will come as no event. Gives up after 30 s (a transaction held open that
     * long holds back every sync anyway). A collection that fails to refresh does not stop the others';
     * the last failure is thrown at the end. Stops when `current()` says the socket is gone.
     * @param {string | undefined} position
     * @param {() => boolean} current
     */
    catchUp(position: string | undefined, current: () => boolean): Promise<void>;
    /**
     * Waits `milliseconds`, or until the stream is closed.
     * @param {number} milliseconds
     * @returns {Promise<void>}
     */
    pause(milliseconds: number): Promise<void>;
    /** @param {string} url */
    collectionsOf(url: string): NotificationCollection[];
    /** @param {"disconnected" | "connecting" | "connected" | "waiting" | "failed"} state */
    setConnectionState(state: "disconnected" | "connecting" | "connected" | "waiting" | "failed"): void;
    /**
     * Follows the page: when it comes back into view, or the browser back online, everything held is
     * synced and a stream that is waiting to reconnect goes at once. Returns the function that stops
     * following it.
     * @param {{document?: Document, window?: Window}} target
     */
    followPage({ document, window }?: {
        document?: Document;
        window?: Window;
    }): () => void;
    /** Everything, as the client refreshes by itself: a 429 waited out (up to 30 s), failures told. */
    refreshInBackground(): void;
    /** @param {() => Promise<unknown>} work */
    background(work: () => Promise<unknown>): void;
    /**
     * The channel's categories with the user's choices: whether each reaches their collection
     * (`inbox`) and may alert them (`push`), their own choice or the channel's default.
     * @param {string} channelURL
     * @returns {Promise<import("./types.js").CategoryPreference[]>}
     */
    categoryPreferences(channelURL: string): Promise<import("./types.js").CategoryPreference[]>;
    /**
     * Chooses whether a category's notifications reach the user's collection and may alert them:
     * each of `inbox` and `push` given changes (`null`: back to the channel's default). Applies to
     * notifications sent afterwards.
     * @param {string} channelURL
     * @param {string} category
     * @param {{inbox?: boolean | null, push?: boolean | null}} choice
     * @returns {Promise<import("./types.js").CategoryPreference>}
     */
    setCategoryPreference(channelURL: string, category: string, choice: {
        inbox?: boolean | null;
        push?: boolean | null;
    }): Promise<import("./types.js").CategoryPreference>;
    /**
     * The topics the user is subscribed to, in id order: every page, read now.
     * @returns {Promise<import("./types.js").Topic[]>}
     */
    topics(): Promise<import("./types.js").Topic[]>;
    /**
     * Follows a topic users may subscribe to themselves (otherwise a `HeraldError` with code
     * `topic_not_self_subscribe`); following one the user has changes nothing.
     * @param {string} topic
     * @returns {Promise<import("./types.js").Topic>}
     */
    follow(topic: string): Promise<import("./types.js").Topic>;
    /**
     * Mutes or unmutes a topic the user is subscribed to, however they came to be: a muted topic's
     * sends give them nothing. A topic users may follow themselves is followed first if need be.
     * @param {string} topic
     * @param {boolean} muted
     * @returns {Promise<import("./types.js").Topic>}
     */
    setMuted(topic: string, muted: boolean): Promise<import("./types.js").Topic>;
    /**
     * Unfollows a topic users may subscribe to themselves.
     * @param {string} topic
     * @returns {Promise<void>}
     */
    unfollow(topic: string): Promise<void>;
    /**
     * Subscribes this browser to Herald's pushes through the page's service worker (which loads
     * `herald-worker.js`, see there), with Herald's VAPID key; registers the subscription as the
     * user's device and names it from then on (a stream that is open reconnects naming it, so that
     * while it is open the device gets no refresh pushes); and follows the worker's word that a
     * refresh push came (everything held is synced, which answers the push). Asks the user's
     * permission to notify first if the page has not. Resolves to the device id. The registration's
     * push subscription, if it has one Herald did not make (the app's own pushes), is replaced only
     * with `{replace: true}`; else this throws a `HeraldError` `push_subscription_taken`.
     *
     * When the user signs out: `disablePush(registration)` (the next user must not get their pushes),
     * then `close()`.
     * @param {ServiceWorkerRegistration} registration
     * @param {{replace?: boolean}} [options]
     * @returns {Promise<string>}
     */
    enablePush(registration: ServiceWorkerRegistration, options?: {
        replace?: boolean | undefined;
    } | undefined): Promise<string>;
    /**
     * Ends what `enablePush` began: the device is removed from the user's, the browser's subscription
     * ended, the worker's credentials forgotten.
     * @param {ServiceWorkerRegistration} registration
     */
    disablePush(registration: ServiceWorkerRegistration): Promise<void>;
    /**
     * Reads what the cache kept of a new collection (a cache that fails is a cache without it).
     * @param {NotificationCollection} collection
     * @param {string} key
     */
    restore(collection: NotificationCollection, key: string): Promise<void>;
    /**
     * Keeps the collection in the cache: once a burst of changes is over (the next task), the state it
     * has then; a write that fails is told (`error`), and the page goes on.
     * @param {NotificationCollection} collection
     */
    saveCollection(collection: NotificationCollection): void;
    /**
     * The key the client holds `collection` under, or null once it is forgotten.
     * @param {NotificationCollection} collection
     */
    keyOf(collection: NotificationCollection): string | null;
    /** @param {ChannelList} _list */
    saveChannelList(_list: ChannelList): void;
    /** @param {NotificationCollection} collection */
    forget(collection: NotificationCollection): void;
    /** Closes the stream and empties every collection and the list; the client cannot be used again. */
    close(): Promise<void>;
}
import { HeraldAPI } from "./api.js";
import { ChannelList } from "./channel-list.js";
import { NotificationCollection } from "./collection.js";
