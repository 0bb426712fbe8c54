/**
 * Whether a notification in this state belongs in a collection of `status`.
 * @param {import("./types.js").InboxStatus} status
 * @param {import("./types.js").HeraldNotification} notification
 */
export function shows(status: import("./types.js").InboxStatus, notification: import("./types.js").HeraldNotification): boolean;
/**
 * One channel's notifications for the signed-in user (optionally one category, and of one inbox
 * status: by default everything not archived), newest first, kept in step with Herald.
 *
 * It keeps the sync protocol's duties so the page does not: the sync token; every change applied by
 * its position (a version older than the one held changes nothing); never a notification twice;
 * deleted ones removed (and those whose state takes them out of its status, until a later change
 * brings them back); and when the server cannot continue the token (`is_live: false`: the channel
 * was reset, the gap grew too large, the token expired) it loads the newest page afresh and says so.
 *
 * Events (`addEventListener`): `change` (`detail`: `{inserted, updated, removed}`, ids) after every
 * change, and `reload` when it was loaded afresh (the first load too).
 */
export class NotificationCollection extends EventTarget {
    /**
     * @param {string} channelURL
     * @param {string | null} category
     * @param {import("./client.js").HeraldClient} client
     * @param {import("./types.js").InboxStatus} [status]
     */
    constructor(channelURL: string, category: string | null, client: import("./client.js").HeraldClient, status?: import("./types.js").InboxStatus | undefined);
    /** The channel's URL (its id). */
    channelURL: string;
    /** Only notifications of this category, when set. */
    category: string | null;
    /** Only notifications of this inbox status. */
    status: import("./types.js").InboxStatus;
    /** @type {import("./types.js").HeraldNotification[]} Newest first. */
    notifications: import("./types.js").HeraldNotification[];
    /** Older notifications exist on the server that `loadPrevious()` would bring. */
    hasPrevious: boolean;
    /** @type {import("./types.js").ChannelState} The user's unread count, last read and last seen here. */
    state: import("./types.js").ChannelState;
    /** @type {import("./types.js").ChannelInfo | null} The channel as the server last described it. */
    channel: import("./types.js").ChannelInfo | null;
    /** Whether it continues from a token the server accepted. */
    isLive: boolean;
    /** How many times it was loaded afresh because the server could not continue its token. */
    reloadCount: number;
    /** The page size of loads and syncs (the server allows up to 100). */
    pageSize: number;
    /** @type {import("./client.js").HeraldClient | null} */
    client: import("./client.js").HeraldClient | null;
    /** @type {string | null} */
    token: string | null;
    /** Every change below this position is reflected here (the horizon of the last whole answer). */
    syncedThrough: bigint;
    /** The position of the newest change `state` reflects. */
    statePosition: bigint;
    /** @type {string | null} */
    previousCursor: string | null;
    /**
     * Ids that left the collection (deleted, or out of its status), each with the position of its
     * leaving: only a version above it brings the notification back, so an older one arriving late
     * cannot. (A deletion is for good: nothing comes after it.)
     * @type {Map<string, bigint>}
     */
    removedAt: Map<string, bigint>;
    /**
     * Copies this client's own read marks read, by id, with the mark's position: until a sync has
     * passed that position, a version older than it still shows them read (see `markRead`).
     * @type {Map<string, bigint>}
     */
    readAhead: Map<string, bigint>;
    /** Loads of the newest page: an older page asked for under one load is not added to the next. */
    loads: number;
    /** One refresh at a time. */
    refreshing: Coalescing;
    /** @type {Promise<void> | null} Reading the client's cache; a sync waits for it (`restore`). */
    restoring: Promise<void> | null;
    /** @type {Promise<void> | null} */
    loadingPrevious: Promise<void> | null;
    /**
     * Brings the collection up to date: the first page when it has none (or the server refused its
     * token), else every change since its token. Resolves to whether anything changed. A refresh asked
     * for while one runs makes that one go round once more, and shares its outcome.
     * @returns {Promise<boolean>}
     */
    refresh(): Promise<boolean>;
    /**
     * Loads the page older than the oldest held. A call while one loads shares it; a page that comes
     * back after the collection was loaded afresh is dropped (it would leave a gap).
     * @returns {Promise<void>}
     */
    loadPrevious(): Promise<void>;
    loadPreviousPage(): Promise<void>;
    /**
     * Marks every notification of the channel read, or only `ids`; resolves to the unread count after.
     * @param {string[] | null} [ids]
     * @returns {Promise<number>}
     */
    markRead(ids?: string[] | null | undefined): Promise<number>;
    /**
     * Archives these notifications (reading them): they leave the inbox for the `archived` status.
     * Resolves to the unread count after.
     * @param {string[]} ids
     */
    archive(ids: string[]): Promise<number>;
    /** Archives every notification of the channel that is read. */
    archiveRead(): Promise<number>;
    /** Archives every notification of the channel, reading them all. */
    archiveAll(): Promise<number>;
    /**
     * Brings archived notifications back to the inbox (still read).
     * @param {string[]} ids
     */
    unarchive(ids: string[]): Promise<number>;
    /**
     * Marks read notifications unread again (back in the inbox if archived); the count follows.
     * @param {string[]} ids
     */
    markUnread(ids: string[]): Promise<number>;
    /**
     * Removes notifications from this user's collections on every device.
     * @param {string[]} ids
     */
    delete(ids: string[]): Promise<number>;
    /**
     * Presses one of a notification's actions (`notification.actions`): remembered on every device of
     * the user (`actions_done`). Pressing one already pressed changes nothing.
     * @param {string} action
     * @param {string} notificationID
     */
    press(action: string, notificationID: string): Promise<number>;
    /**
     * One of the user's own state changes (`change`, `body`, as `HeraldAPI.changeState` takes them).
     * @param {"archive" | "unarchive" | "unread" | "delete"} change
     * @param {{notification_ids?: string[], scope?: "read" | "all"}} body
     */
    changeOwnState(change: "archive" | "unarchive" | "unread" | "delete", body: {
        notification_ids?: string[];
        scope?: "read" | "all";
    }): Promise<number>;
    /**
     * Runs a state change (`call`); then every collection of the channel this client keeps (the inbox,
     * the archive, …) syncs, each by position, and so do the user's other devices. With `taking`, the
     * channel state it answers is taken at once.
     * @param {(api: import("./api.js").HeraldAPI) => Promise<import("./types.js").ChannelState & {position?: string}>} call
     * @param {boolean} [taking]
     * @returns {Promise<number>}
     */
    changeState(call: (api: import("./api.js").HeraldAPI) => Promise<import("./types.js").ChannelState & {
        position?: string;
    }>, taking?: boolean | undefined): Promise<number>;
    /**
     * Moves the channel's `last_seen_at` forward (to now, or `at`).
     * @param {Date | null} [at]
     */
    markSeen(at?: Date | null | undefined): Promise<void>;
    /**
     * Tells the server the user saw or opened these notifications (for its statistics).
     * @param {"viewed" | "clicked"} type
     * @param {string[]} ids
     */
    log(type: "viewed" | "clicked", ids: string[]): Promise<void>;
    /** Stops keeping the collection up to date; the client forgets it. */
    dispose(): void;
    /**
     * Syncs until the server has no more (`has_more`), or loads afresh when it cannot continue the
     * token. An answer that arrives after the collection was cut from its client changes nothing.
     * @returns {Promise<boolean>}
     */
    sync(): Promise<boolean>;
    /** Loads the newest page afresh, dropping everything held. */
    reload(): Promise<void>;
    /**
     * Applies versions of notifications and removals by position: a version replaces the one held only
     * if its position is not lower; one not held comes in only if it is not older than what the
     * collection has synced through (`live` events; a sync's own versions always); a version whose state
     * is outside the collection's status takes the notification out, as a removal does; a removed id
     * comes back only with a version above its removal (`at`: where the removals happened, or an upper
     * bound below any later change); one older than the oldest held while older pages exist is left
     * for `loadPrevious()` (holding it would leave a gap).
     * @param {import("./types.js").HeraldNotification[]} versions
     * @param {string[]} removedIDs
     * @param {boolean} [live]
     * @param {bigint | null} [at]
     */
    apply(versions: import("./types.js").HeraldNotification[], removedIDs: string[], live?: boolean | undefined, at?: bigint | null | undefined): {
        inserted: string[];
        updated: string[];
        removed: string[];
    };
    /**
     * Whether the notification left the collection at or after this version's position.
     * @param {import("./types.js").HeraldNotification} version
     */
    left(version: import("./types.js").HeraldNotification): boolean;
    /**
     * A version as this collection shows it: read when one of this client's marks read the copy and
     * the version is older than the mark (the server's answer, read before the mark, or held back).
     * @param {import("./types.js").HeraldNotification} version
     * @returns {import("./types.js").HeraldNotification}
     */
    readAheadOf(version: import("./types.js").HeraldNotification): import("./types.js").HeraldNotification;
    /**
     * Every change below `horizon` is reflected now; the marks below it need no more showing ahead.
     * @param {bigint} horizon
     */
    passSyncedThrough(horizon: bigint): void;
    /**
     * A state a stream event or a mark carries, if newer than the state held.
     * @param {import("./types.js").ChannelState} state
     * @param {bigint} position
     */
    takeState(state: import("./types.js").ChannelState, position: bigint): void;
    /**
     * Only the unread count a stream event carries, if newer than the state held.
     * @param {number} count
     * @param {bigint} position
     */
    takeUnread(count: number, position: bigint): void;
    /**
     * A mark's answer: newer than any answer read below its position (a read standby that has not
     * replayed the mark yet), which therefore cannot replace it.
     * @param {import("./types.js").ChannelState & {position?: string}} marked
     */
    takeMark(marked: import("./types.js").ChannelState & {
        position?: string | undefined;
    }): void;
    /** @param {any} answer */
    takeChannel(answer: any): void;
    /**
     * What a cache keeps of the collection, or null while it holds nothing to keep.
     * @returns {import("./cache.js").CollectionSnapshot | null}
     */
    snapshot(): import("./cache.js").CollectionSnapshot | null;
    /**
     * Takes what a cache kept, if nothing newer came meanwhile, and says so with a `reload` event.
     * @param {import("./cache.js").CollectionSnapshot} snapshot
     */
    restore(snapshot: import("./cache.js").CollectionSnapshot): void;
    /**
     * The index of notification `id`, by binary search (newest first; ids grow), or -1.
     * @param {string} id
     */
    indexOf(id: string): number;
    /**
     * Where a notification with id `number` belongs: the first index whose id is not greater.
     * @param {bigint} number
     */
    insertionIndex(number: bigint): number;
    /**
     * @param {string[]} inserted
     * @param {string[]} updated
     * @param {string[]} removed
     */
    changed(inserted: string[], updated: string[], removed: string[]): void;
    /** Empties the collection and cuts it from its client: answers still in flight change nothing. */
    detach(): void;
}
import { Coalescing } from "./coalescing.js";
