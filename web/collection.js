import { Coalescing } from "./coalescing.js";

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
  constructor(channelURL, category, client, status = /** @type {import("./types.js").InboxStatus} */ ("inbox")) {
    super();
    /** The channel's URL (its id). */
    this.channelURL = channelURL;
    /** Only notifications of this category, when set. */
    this.category = category;
    /** Only notifications of this inbox status. */
    this.status = status;
    /** @type {import("./types.js").HeraldNotification[]} Newest first. */
    this.notifications = [];
    /** Older notifications exist on the server that `loadPrevious()` would bring. */
    this.hasPrevious = false;
    /** @type {import("./types.js").ChannelState} The user's unread count, last read and last seen here. */
    this.state = { unread_count: 0, last_read_at: null, last_seen_at: null };
    /** @type {import("./types.js").ChannelInfo | null} The channel as the server last described it. */
    this.channel = null;
    /** Whether it continues from a token the server accepted. */
    this.isLive = false;
    /** How many times it was loaded afresh because the server could not continue its token. */
    this.reloadCount = 0;
    /** The page size of loads and syncs (the server allows up to 100). */
    this.pageSize = 30;

    /** @type {import("./client.js").HeraldClient | null} */
    this.client = client;
    /** @type {string | null} */
    this.token = null;
    /** Every change below this position is reflected here (the horizon of the last whole answer). */
    this.syncedThrough = 0n;
    /** The position of the newest change `state` reflects. */
    this.statePosition = 0n;
    /** @type {string | null} */
    this.previousCursor = null;
    /**
     * Ids that left the collection (deleted, or out of its status), each with the position of its
     * leaving: only a version above it brings the notification back, so an older one arriving late
     * cannot. (A deletion is for good: nothing comes after it.)
     * @type {Map<string, bigint>}
     */
    this.removedAt = new Map();
    /**
     * Copies this client's own read marks read, by id, with the mark's position: until a sync has
     * passed that position, a version older than it still shows them read (see `markRead`).
     * @type {Map<string, bigint>}
     */
    this.readAhead = new Map();
    /** Loads of the newest page: an older page asked for under one load is not added to the next. */
    this.loads = 0;
    /** One refresh at a time. */
    this.refreshing = new Coalescing(() => this.sync());
    /** @type {Promise<void> | null} Reading the client's cache; a sync waits for it (`restore`). */
    this.restoring = null;
    /** @type {Promise<void> | null} */
    this.loadingPrevious = null;
  }

  /**
   * Brings the collection up to date: the first page when it has none (or the server refused its
   * token), else every change since its token. Resolves to whether anything changed. A refresh asked
   * for while one runs makes that one go round once more, and shares its outcome.
   * @returns {Promise<boolean>}
   */
  refresh() {
    if (!this.client) return Promise.reject(signedOut());
    return this.refreshing.run();
  }

  /**
   * Loads the page older than the oldest held. A call while one loads shares it; a page that comes
   * back after the collection was loaded afresh is dropped (it would leave a gap).
   * @returns {Promise<void>}
   */
  loadPrevious() {
    if (this.loadingPrevious) return this.loadingPrevious;
    this.loadingPrevious = (async () => {
      try {
        await this.loadPreviousPage();
      } finally {
        this.loadingPrevious = null;
      }
    })();
    return this.loadingPrevious;
  }

  async loadPreviousPage() {
    const client = this.client;
    if (!this.hasPrevious || !this.previousCursor || !client) return;
    const load = this.loads;
    const page = await client.api.older(this.channelURL, {
      before: this.previousCursor,
      limit: this.pageSize,
      category: this.category,
      status: this.status,
    });
    if (load !== this.loads || this.client !== client) return;
    /** @type {string[]} */
    const inserted = [];
    for (const version of page.notifications) {
      if (this.left(version) || this.indexOf(version.id) !== -1) continue;
      this.notifications.splice(this.insertionIndex(BigInt(version.id)), 0, version);
      inserted.push(version.id);
    }
    this.previousCursor = page.prev_cursor;
    this.hasPrevious = page.prev_cursor !== null;
    client.saveCollection(this);
    this.changed(inserted, [], []);
  }

  /**
   * Marks every notification of the channel read, or only `ids`; resolves to the unread count after.
   * @param {string[] | null} [ids]
   * @returns {Promise<number>}
   */
  async markRead(ids = null) {
    const client = this.client;
    if (!client) throw signedOut();
    const marked = await client.api.markRead(this.channelURL, ids);
    if (this.client !== client) throw signedOut();
    this.takeMark(marked);
    // The copies the mark read show read now: a sync may hold the server's versions back a while (a
    // transaction open elsewhere in the database cluster). They keep their own positions — the
    // server's version may be older than the mark (read already, elsewhere) or the mark's own — and
    // until a sync passes the mark, a version below it still shows them read.
    if (marked.position !== undefined) {
      const position = BigInt(marked.position);
      const targets = ids ? new Set(ids) : null;
      /** @type {string[]} */
      const updated = [];
      this.notifications = this.notifications.map((notification) => {
        if (notification.status === "READ" || (targets && !targets.has(notification.id)) || BigInt(notification.position) > position) return notification;
        this.readAhead.set(notification.id, position);
        updated.push(notification.id);
        return { ...notification, status: /** @type {const} */ ("READ") };
      });
      client.saveCollection(this);
      this.changed([], updated, []);
    }
    await this.refresh();
    await client.refreshUnread();
    return this.state.unread_count;
  }

  /**
   * Archives these notifications (reading them): they leave the inbox for the `archived` status.
   * Resolves to the unread count after.
   * @param {string[]} ids
   */
  archive(ids) {
    return this.changeOwnState("archive", { notification_ids: ids });
  }

  /** Archives every notification of the channel that is read. */
  archiveRead() {
    return this.changeOwnState("archive", { scope: "read" });
  }

  /** Archives every notification of the channel, reading them all. */
  archiveAll() {
    return this.changeOwnState("archive", { scope: "all" });
  }

  /**
   * Brings archived notifications back to the inbox (still read).
   * @param {string[]} ids
   */
  unarchive(ids) {
    return this.changeOwnState("unarchive", { notification_ids: ids });
  }

  /**
   * Marks read notifications unread again (back in the inbox if archived); the count follows.
   * @param {string[]} ids
   */
  markUnread(ids) {
    return this.changeOwnState("unread", { notification_ids: ids });
  }

  /**
   * Removes notifications from this user's collections on every device.
   * @param {string[]} ids
   */
  delete(ids) {
    return this.changeOwnState("delete", { notification_ids: ids });
  }

  /**
   * Presses one of a notification's actions (`notification.actions`): remembered on every device of
   * the user (`actions_done`). Pressing one already pressed changes nothing.
   * @param {string} action
   * @param {string} notificationID
   */
  press(action, notificationID) {
    // The answer is the state of the notification's channel, which need not be this one's: only the
    // syncs bring the change.
    return this.changeState((api) => api.pressAction(notificationID, action), false);
  }

  /**
   * One of the user's own state changes (`change`, `body`, as `HeraldAPI.changeState` takes them).
   * @param {"archive" | "unarchive" | "unread" | "delete"} change
   * @param {{notification_ids?: string[], scope?: "read" | "all"}} body
   */
  changeOwnState(change, body) {
    return this.changeState((api) => api.changeState(this.channelURL, change, body));
  }

  /**
   * Runs a state change (`call`); then every collection of the channel this client keeps (the inbox,
   * the archive, …) syncs, each by position, and so do the user's other devices. With `taking`, the
   * channel state it answers is taken at once.
   * @param {(api: import("./api.js").HeraldAPI) => Promise<import("./types.js").ChannelState & {position?: string}>} call
   * @param {boolean} [taking]
   * @returns {Promise<number>}
   */
  async changeState(call, taking = true) {
    const client = this.client;
    if (!client) throw signedOut();
    const changed = await call(client.api);
    if (this.client !== client) throw signedOut();
    const others = client.collectionsOf(this.channelURL).filter((collection) => collection !== this);
    if (taking) for (const collection of [this, ...others]) collection.takeMark(changed);
    for (const collection of others) client.background(() => collection.refresh());
    await this.refresh();
    await client.refreshUnread();
    return this.state.unread_count;
  }

  /**
   * Moves the channel's `last_seen_at` forward (to now, or `at`).
   * @param {Date | null} [at]
   */
  async markSeen(at = null) {
    const client = this.client;
    if (!client) throw signedOut();
    const marked = await client.api.markSeen(this.channelURL, at);
    if (this.client !== client) throw signedOut();
    this.takeMark(marked);
    this.dispatchEvent(new CustomEvent("change", { detail: { inserted: [], updated: [], removed: [] } }));
  }

  /**
   * Tells the server the user saw or opened these notifications (for its statistics).
   * @param {"viewed" | "clicked"} type
   * @param {string[]} ids
   */
  async log(type, ids) {
    if (!this.client) throw signedOut();
    await this.client.api.logEvents(type, ids);
  }

  /** Stops keeping the collection up to date; the client forgets it. */
  dispose() {
    this.client?.forget(this);
  }

  // Sync ------------------------------------------------------------------------------------------

  /**
   * Syncs until the server has no more (`has_more`), or loads afresh when it cannot continue the
   * token. An answer that arrives after the collection was cut from its client changes nothing.
   * @returns {Promise<boolean>}
   */
  async sync() {
    // What the cache holds must be in before an answer: it would otherwise overwrite a newer one.
    if (this.restoring) await this.restoring;
    const client = this.client;
    if (!client) throw signedOut();
    if (this.token === null) {
      await this.reload();
      return true;
    }
    let changed = false;
    let current = this.token;
    for (;;) {
      const answer = await client.api.sync(this.channelURL, {
        token: current,
        limit: this.pageSize,
        category: this.category,
        status: this.status,
        device: client.device,
      });
      if (this.client !== client) throw signedOut();
      if (!answer.is_live || answer.next_token === null) {
        this.isLive = false;
        await this.reload();
        return true;
      }
      // Every change the answer holds lies below its horizon; anything later lies at or above it.
      const { inserted, updated, removed } = this.apply(answer.notifications, answer.deleted, false, BigInt(answer.horizon) - 1n);
      this.takeChannel(answer);
      if (!answer.has_more) this.passSyncedThrough(BigInt(answer.horizon));
      client.noteBadge(answer.badge, BigInt(answer.horizon));
      this.token = answer.next_token;
      client.saveCollection(this);
      this.changed(inserted, updated, removed);
      changed = changed || inserted.length + updated.length + removed.length > 0;
      if (!answer.has_more) return changed;
      current = answer.next_token;
    }
  }

  /** Loads the newest page afresh, dropping everything held. */
  async reload() {
    const client = this.client;
    if (!client) throw signedOut();
    const answer = await client.api.sync(this.channelURL, { limit: this.pageSize, category: this.category, status: this.status, device: client.device });
    if (this.client !== client) throw signedOut();
    const wasLoaded = this.token !== null;
    this.loads += 1;
    this.notifications = answer.notifications.map((/** @type {import("./types.js").HeraldNotification} */ version) => this.readAheadOf(version)).sort(newestFirst);
    this.previousCursor = answer.prev_cursor;
    this.hasPrevious = answer.prev_cursor !== null;
    this.removedAt = new Map();
    this.token = answer.next_token;
    this.isLive = answer.next_token !== null;
    this.syncedThrough = 0n;
    this.passSyncedThrough(BigInt(answer.horizon));
    this.statePosition = 0n;
    this.takeChannel(answer);
    client.noteBadge(answer.badge, BigInt(answer.horizon));
    if (wasLoaded) this.reloadCount += 1;
    client.saveCollection(this);
    this.dispatchEvent(new Event("reload"));
  }

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
  apply(versions, removedIDs, live = false, at = null) {
    /** @type {string[]} */ const inserted = [];
    /** @type {string[]} */ const updated = [];
    /** @type {string[]} */ const removed = [];
    for (const received of versions) {
      if (this.category !== null && received.category !== this.category) continue;
      const version = this.readAheadOf(received);
      if (this.left(version)) continue;
      const index = this.indexOf(version.id);
      if (!shows(this.status, version)) {
        // Archived, read or unread elsewhere: it leaves this collection by its position, and a later
        // change may bring it back.
        if (live && BigInt(version.position) < this.syncedThrough) continue;
        if (index !== -1) {
          if (BigInt(version.position) < BigInt(this.notifications[index].position)) continue;
          this.notifications.splice(index, 1);
          removed.push(version.id);
        }
        this.removedAt.set(version.id, BigInt(version.position));
        continue;
      }
      if (index !== -1) {
        const held = this.notifications[index];
        const position = BigInt(version.position);
        const heldPosition = BigInt(held.position);
        if (position < heldPosition || (position === heldPosition && JSON.stringify(version) === JSON.stringify(held))) continue;
        this.notifications[index] = version;
        updated.push(version.id);
      } else {
        if (live && BigInt(version.position) < this.syncedThrough) continue;
        const oldest = this.notifications[this.notifications.length - 1];
        if (this.hasPrevious && oldest && BigInt(version.id) < BigInt(oldest.id)) continue;
        this.notifications.splice(this.insertionIndex(BigInt(version.id)), 0, version);
        inserted.push(version.id);
      }
    }
    for (const id of removedIDs) {
      const position = at ?? BigInt("9223372036854775807");
      this.removedAt.set(id, max(this.removedAt.get(id) ?? position, position));
      const index = this.indexOf(id);
      if (index !== -1) {
        this.notifications.splice(index, 1);
        removed.push(id);
      }
    }
    return { inserted, updated, removed };
  }

  /**
   * Whether the notification left the collection at or after this version's position.
   * @param {import("./types.js").HeraldNotification} version
   */
  left(version) {
    const at = this.removedAt.get(version.id);
    return at !== undefined && BigInt(version.position) <= at;
  }

  /**
   * A version as this collection shows it: read when one of this client's marks read the copy and
   * the version is older than the mark (the server's answer, read before the mark, or held back).
   * @param {import("./types.js").HeraldNotification} version
   * @returns {import("./types.js").HeraldNotification}
   */
  readAheadOf(version) {
    const mark = this.readAhead.get(version.id);
    if (mark === undefined || version.status === "READ") return version;
    if (BigInt(version.position) >= mark) {
      this.readAhead.delete(version.id);
      return version;
    }
    return { ...version, status: /** @type {const} */ ("READ") };
  }

  /**
   * Every change below `horizon` is reflected now; the marks below it need no more showing ahead.
   * @param {bigint} horizon
   */
  passSyncedThrough(horizon) {
    this.syncedThrough = max(this.syncedThrough, horizon);
    for (const [id, mark] of this.readAhead) if (mark < this.syncedThrough) this.readAhead.delete(id);
  }

  /**
   * A state a stream event or a mark carries, if newer than the state held.
   * @param {import("./types.js").ChannelState} state
   * @param {bigint} position
   */
  takeState(state, position) {
    if (position < this.statePosition) return;
    this.state = { unread_count: state.unread_count, last_read_at: state.last_read_at, last_seen_at: state.last_seen_at };
    this.statePosition = position;
  }

  /**
   * Only the unread count a stream event carries, if newer than the state held.
   * @param {number} count
   * @param {bigint} position
   */
  takeUnread(count, position) {
    if (position < this.statePosition) return;
    this.state = { ...this.state, unread_count: count };
    this.statePosition = position;
  }

  /**
   * A mark's answer: newer than any answer read below its position (a read standby that has not
   * replayed the mark yet), which therefore cannot replace it.
   * @param {import("./types.js").ChannelState & {position?: string}} marked
   */
  takeMark(marked) {
    if (marked.position === undefined) {
      this.takeState(marked, this.statePosition);
      return;
    }
    const position = BigInt(marked.position) + 1n;
    this.takeState(marked, position);
    this.client?.noteUnread(marked.unread_count, this.channelURL, position);
  }

  /** @param {any} answer */
  takeChannel(answer) {
    const horizon = BigInt(answer.horizon);
    // The answer's state is its snapshot's: newer than any event below its horizon.
    if (horizon >= this.statePosition) {
      this.takeState(answer.channel.state, horizon);
      this.client?.noteUnread(answer.channel.state.unread_count, this.channelURL, horizon);
    }
    const { state: _state, ...channel } = answer.channel;
    this.channel = channel;
  }

  // The cache ---------------------------------------------------------------------------------------

  /**
   * What a cache keeps of the collection, or null while it holds nothing to keep.
   * @returns {import("./cache.js").CollectionSnapshot | null}
   */
  snapshot() {
    if (this.token === null) return null;
    return {
      notifications: this.notifications,
      hasPrevious: this.hasPrevious,
      previousCursor: this.previousCursor,
      state: this.state,
      channel: this.channel,
      token: this.token,
      syncedThrough: String(this.syncedThrough),
      statePosition: String(this.statePosition),
    };
  }

  /**
   * Takes what a cache kept, if nothing newer came meanwhile, and says so with a `reload` event.
   * @param {import("./cache.js").CollectionSnapshot} snapshot
   */
  restore(snapshot) {
    if (this.token !== null || !this.client) return;
    this.notifications = snapshot.notifications;
    this.hasPrevious = snapshot.hasPrevious;
    this.previousCursor = snapshot.previousCursor;
    this.state = snapshot.state;
    this.channel = snapshot.channel;
    this.token = snapshot.token;
    this.isLive = true;
    this.syncedThrough = BigInt(snapshot.syncedThrough);
    this.statePosition = BigInt(snapshot.statePosition);
    this.dispatchEvent(new Event("reload"));
  }

  // Lookup ------------------------------------------------------------------------------------------

  /**
   * The index of notification `id`, by binary search (newest first; ids grow), or -1.
   * @param {string} id
   */
  indexOf(id) {
    let number;
    try {
      number = BigInt(id);
    } catch {
      return -1;
    }
    const at = this.insertionIndex(number);
    return at < this.notifications.length && BigInt(this.notifications[at].id) === number ? at : -1;
  }

  /**
   * Where a notification with id `number` belongs: the first index whose id is not greater.
   * @param {bigint} number
   */
  insertionIndex(number) {
    let low = 0;
    let high = this.notifications.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (BigInt(this.notifications[middle].id) > number) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /**
   * @param {string[]} inserted
   * @param {string[]} updated
   * @param {string[]} removed
   */
  changed(inserted, updated, removed) {
    if (inserted.length + updated.length + removed.length === 0) return;
    this.dispatchEvent(new CustomEvent("change", { detail: { inserted, updated, removed } }));
  }

  /** Empties the collection and cuts it from its client: answers still in flight change nothing. */
  detach() {
    this.client = null;
    this.notifications = [];
    this.hasPrevious = false;
    this.previousCursor = null;
    this.state = { unread_count: 0, last_read_at: null, last_seen_at: null };
    this.channel = null;
    this.isLive = false;
    this.token = null;
    this.dispatchEvent(new Event("reload"));
  }
}

/**
 * @param {{id: string}} a
 * @param {{id: string}} b
 */
function newestFirst(a, b) {
  const [x, y] = [BigInt(a.id), BigInt(b.id)];
  return x > y ? -1 : x < y ? 1 : 0;
}

/**
 * @param {bigint} a
 * @param {bigint} b
 */
function max(a, b) {
  return a > b ? a : b;
}

function signedOut() {
  return new Error("The collection's client was closed.");
}

/**
 * Whether a notification in this state belongs in a collection of `status`.
 * @param {import("./types.js").InboxStatus} status
 * @param {import("./types.js").HeraldNotification} notification
 */
export function shows(status, notification) {
  const archived = notification.archived === true;
  switch (status) {
    case "unread":
      return !archived && notification.status !== "READ";
    case "read":
      return !archived && notification.status === "READ";
    case "archived":
      return archived;
    case "all":
      return true;
    default:
      return !archived;
  }
}
