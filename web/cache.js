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
export class IndexedDBCache {
  /** @param {string} name The database's name, the signed-in user's own (`herald-${userID}`). */
  constructor(name) {
    this.name = name;
    /** @type {Promise<IDBDatabase> | null} */
    this.database = null;
  }

  /** @returns {Promise<IDBDatabase>} */
  open() {
    this.database ??= new Promise((resolve, reject) => {
      const request = indexedDB.open(this.name, 1);
      request.onupgradeneeded = () => request.result.createObjectStore("collections");
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    return this.database;
  }

  /**
   * @param {string} key
   * @returns {Promise<CollectionSnapshot | null>}
   */
  async load(key) {
    const store = (await this.open()).transaction("collections").objectStore("collections");
    return done(store.get(key)).then((value) => value ?? null);
  }

  /**
   * @param {string} key
   * @param {CollectionSnapshot} snapshot
   */
  async save(key, snapshot) {
    const transaction = (await this.open()).transaction("collections", "readwrite");
    transaction.objectStore("collections").put(snapshot, key);
    await committed(transaction);
  }

  async clear() {
    const transaction = (await this.open()).transaction("collections", "readwrite");
    transaction.objectStore("collections").clear();
    await committed(transaction);
  }
}

/**
 * @param {IDBRequest} request
 * @returns {Promise<any>}
 */
function done(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** @param {IDBTransaction} transaction */
function committed(transaction) {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve(undefined);
    transaction.onerror = () => reject(transaction.error);
    transaction.onabort = () => reject(transaction.error);
  });
}
