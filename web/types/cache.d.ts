/**
 * What a cache keeps of a collection: enough to show its last state at once and to sync on from it.
 * @typedef {object} CollectionSnapshot
 * @property {import("./types.js").HeraldNotification[]} notifications Newest first.
 * @property {boolean} hasPrevious
 * @property {string | null} previousCursor
 * @property {import("./types.js").ChannelState} state
 * @property {import("./types.js").ChannelInfo | null} channel
 * @property {string} token The sync token the notifications are current to.
 * @property {string} syncedThrough Every change below this position is reflected (decimal).
 * @property {string} statePosition The position `state` is from (decimal).
 */
/**
 * Where a client keeps its collections between page loads, for one signed-in user. `IndexedDBCache`
 * is the browser's; anything with these methods will do.
 * @typedef {object} HeraldCache
 * @property {(key: string) => Promise<CollectionSnapshot | null>} load
 * @property {(key: string, snapshot: CollectionSnapshot) => Promise<void>} save
 * @property {() => Promise<void>} clear Forgets everything (the user signed out).
 */
/**
 * A cache in the browser's IndexedDB: one database per user (name it after them), one record per
 * collection. It is a copy: when it cannot be opened the client goes on without it.
 * @implements {HeraldCache}
 */
export class IndexedDBCache implements HeraldCache {
    /** @param {string} name The database's name, the signed-in user's own (`herald-${userID}`). */
    constructor(name: string);
    name: string;
    /** @type {Promise<IDBDatabase> | null} */
    database: Promise<IDBDatabase> | null;
    /** @returns {Promise<IDBDatabase>} */
    open(): Promise<IDBDatabase>;
    /**
     * @param {string} key
     * @returns {Promise<CollectionSnapshot | null>}
     */
    load(key: string): Promise<CollectionSnapshot | null>;
    /**
     * @param {string} key
     * @param {CollectionSnapshot} snapshot
     */
    save(key: string, snapshot: CollectionSnapshot): Promise<void>;
    clear(): Promise<void>;
}
/**
 * What a cache keeps of a collection: enough to show its last state at once and to sync on from it.
 */
export type CollectionSnapshot = {
    /**
     * Newest first.
     */
    notifications: import("./types.js").HeraldNotification[];
    hasPrevious: boolean;
    previousCursor: string | null;
    state: import("./types.js").ChannelState;
    channel: import("./types.js").ChannelInfo | null;
    /**
     * The sync token the notifications are current to.
     */
    token: string;
    /**
     * Every change below this position is reflected (decimal).
     */
    syncedThrough: string;
    /**
     * The position `state` is from (decimal).
     */
    statePosition: string;
};
/**
 * Where a client keeps its collections between page loads, for one signed-in user. `IndexedDBCache`
 * is the browser's; anything with these methods will do.
 */
export type HeraldCache = {
    load: (key: string) => Promise<CollectionSnapshot | null>;
    save: (key: string, snapshot: CollectionSnapshot) => Promise<void>;
    /**
     * Forgets everything (the user signed out).
     */
    clear: () => Promise<void>;
};
