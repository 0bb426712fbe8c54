import { HeraldAPI } from "./api.js";
import { reconnectDelay } from "./backoff.js";
import { ChannelList } from "./channel-list.js";
import { NotificationCollection } from "./collection.js";
import { HeraldError } from "./errors.js";
import { shareWithWorker, subscribe, unsubscribe } from "./push.js";

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
  constructor(options) {
    super();
    const { baseURL, sessionToken, fetchSessionToken, device, fetch: fetcher, WebSocket: socket, pageSize, reconnect, rateLimitRetries, cache } = options;
    /** The requests (exposed for what the client does not wrap). */
    this.api = new HeraldAPI({ baseURL, sessionToken, fetchSessionToken, fetch: fetcher });
    this.api.onUnauthorized = () => this.dispatchEvent(new Event("sessionrefused"));
    /** The device this page is, by its id (a Web Push subscription's), named on syncs and the stream. */
    this.device = device ?? null;
    this.WebSocket = socket ?? globalThis.WebSocket;
    this.pageSize = pageSize ?? 30;
    this.reconnect = { initial: reconnect?.initial ?? 1_000, maximum: reconnect?.maximum ?? 60_000 };
    this.rateLimitRetries = rateLimitRetries ?? 3;
    /** Where collections are kept between page loads, if anywhere. */
    this.cache = cache ?? null;
    /** @type {Set<string>} Collections whose writes to the cache are waiting to start. */
    this.savesDue = new Set();
    /** The user's total unread count (the badge) and each channel's. */
    this.unread = { total: 0, channels: /** @type {Record<string, number>} */ ({}) };
    /** @type {"disconnected" | "connecting" | "connected" | "waiting" | "failed"} */
    this.connectionState = "disconnected";
    /** The user's channel list. */
    this.channels = new ChannelList(this);
    /** @type {Map<string, NotificationCollection>} */
    this.collections = new Map();
    /** @type {Map<string, bigint>} The position each channel's unread count is from. */
    this.unreadPositions = new Map();
    this.closed = false;
    this.wantsStream = false;
    /** @type {Promise<void> | null} */
    this.stream = null;
    this.generation = 0;
    /** @type {WebSocket | null} */
    this.socket = null;
    /** @type {(() => void) | null} Ends the wait before the next reconnection at once. */
    this.wakeReconnect = null;
    /** @type {Set<() => void>} Ends the stream's other waits (`pause`) when it is closed. */
    this.pauses = new Set();
    /** Counts the sockets that closed: work for one socket stops once it has. */
    this.sockets = 0;
    /** @type {(() => void) | null} Stops listening to the service worker (`enablePush`). */
    this.stopFollowingWorker = null;
  }

  /**
   * The collection of `channelURL` (of one `category`, if given, and of one inbox `status`: by
   * default everything not archived): one object per channel, category and status, kept current
   * while the client holds it. Call `refresh()` on it to load it.
   * @param {string} channelURL
   * @param {{category?: string | null, status?: import("./types.js").InboxStatus}} options
   */
  collection(channelURL, { category = null, status = "inbox" } = {}) {
    if (this.closed) throw new Error("The client was closed.");
    const channel = category === null ? channelURL : `${channelURL}\u001f${category}`;
    // The default status adds nothing, so what a cache kept before statuses stays its own.
    const key = status === "inbox" ? channel : `${channel}\u001e${status}`;
    let collection = this.collections.get(key);
    if (!collection) {
      collection = new NotificationCollection(channelURL, category, this, status);
      collection.pageSize = this.pageSize;
      this.collections.set(key, collection);
      if (this.cache) collection.restoring = this.restore(collection, key);
    }
    return collection;
  }

  /**
   * Refreshes every collection held, the channel list and the unread counts; resolves to whether
   * anything changed.
   */
  async refreshAll() {
    const results = await Promise.allSettled([...this.collections.values()].map((collection) => collection.refresh()).concat(this.channels.refresh()));
    await this.refreshUnread();
    const failed = results.find((result) => result.status === "rejected");
    if (failed) throw /** @type {PromiseRejectedResult} */ (failed).reason;
    return results.some((result) => result.status === "fulfilled" && result.value);
  }

  /** Asks for the unread counts; a count held from a newer position (a mark, an event) stays. */
  async refreshUnread() {
    let answer;
    try {
      answer = await this.api.unread();
    } catch {
      return;
    }
    if (this.closed) return;
    const horizon = BigInt(answer.horizon);
    /** @type {Record<string, number>} */
    const channels = {};
    let newer = false;
    for (const { channel_url: url, unread_count: count } of answer.channels) {
      if (horizon >= (this.unreadPositions.get(url) ?? 0n)) {
        channels[url] = count;
        this.unreadPositions.set(url, horizon);
      } else {
        channels[url] = this.unread.channels[url] ?? count;
        newer = true;
      }
    }
    const total = newer ? Object.values(channels).reduce((sum, count) => sum + count, 0) : answer.total;
    this.setUnread(total, channels);
  }

  /**
   * The badge of a collection answer read at `horizon`: taken unless a count held is newer.
   * @param {number} badge
   * @param {bigint} horizon
   */
  noteBadge(badge, horizon) {
    let newest = 0n;
    for (const position of this.unreadPositions.values()) if (position > newest) newest = position;
    if (badge === this.unread.total || horizon < newest) return;
    this.setUnread(badge, this.unread.channels);
  }

  /**
   * A channel's unread count from an event or an answer, unless a later change already gave one.
   * @param {number} count
   * @param {string} url
   * @param {bigint} position
   */
  noteUnread(count, url, position) {
    if (position < (this.unreadPositions.get(url) ?? 0n)) return;
    this.unreadPositions.set(url, position);
    if (this.unread.channels[url] === count) return;
    this.setUnread(this.unread.total, { ...this.unread.channels, [url]: count });
  }

  /**
   * @param {number} total
   * @param {Record<string, number>} channels
   */
  setUnread(total, channels) {
    this.unread = { total, channels };
    this.dispatchEvent(new Event("unread"));
  }

  // The live stream ---------------------------------------------------------------------------

  /**
   * Opens the live stream: events are applied to the collections and the channel list as they
   * happen, and while it is open Herald sends this device no pushes. A dropped connection is opened
   * again after an exponential backoff with jitter (at once when the browser comes back online);
   * every opening syncs what the client holds, since events may have been missed in between.
   */
  connect() {
    if (this.closed) throw new Error("The client was closed.");
    this.wantsStream = true;
    if (!this.stream) this.startStream();
  }

  /** Closes the live stream; resolves once it is closed. */
  async disconnect() {
    this.wantsStream = false;
    this.generation += 1;
    const stream = this.stream;
    this.stream = null;
    this.socket?.close(1000);
    this.wakeReconnect?.();
    for (const wake of this.pauses) wake();
    this.setConnectionState("disconnected");
    await stream;
  }

  startStream() {
    this.generation += 1;
    const generation = this.generation;
    this.stream = this.runStream(generation).finally(() => {
      if (this.generation === generation) this.stream = null;
    });
  }

  /** @param {number} generation */
  async runStream(generation) {
    const current = () => this.generation === generation && !this.closed;
    let failures = 0;
    while (current()) {
      this.setConnectionState("connecting");
      let token;
      try {
        token = await this.api.currentToken();
      } catch {
        if (!current()) return;
        this.setConnectionState("failed");
        this.dispatchEvent(new Event("sessionrefused"));
        return;
      }
      if (!current()) return;
      const openedAt = Date.now();
      const { opened, code } = await this.openSocket(token, generation);
      if (!current()) return;
      // Only a stream that stayed open a while starts the backoff over: one closed soon after it
      // opened (displaced by the user's other tabs past the server's limit, say) keeps backing off.
      if (opened && Date.now() - openedAt > 30_000) failures = 0;
      // Refused before it opened (a browser does not show why), or closed as revoked or expired
      // (1008): a plain request finds out — a session that cannot be renewed ends the stream.
      if (!opened || code === 1008) {
        try {
          await this.channels.refresh();
        } catch (error) {
          if (!current()) return;
          if (error instanceof HeraldError && error.status === 401) {
            this.setConnectionState("failed");
            return;
          }
        }
        if (!current()) return;
      }
      failures += 1;
      this.setConnectionState("waiting");
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, reconnectDelay(failures, this.reconnect.initial, this.reconnect.maximum));
        this.wakeReconnect = () => {
          clearTimeout(timer);
          resolve(undefined);
        };
      });
      this.wakeReconnect = null;
    }
  }

  /**
   * One connection: resolves when it closes, saying whether it said `ready` and its close code.
   * @param {string} token
   * @param {number} generation
   * @returns {Promise<{opened: boolean, code: number}>}
   */
  openSocket(token, generation) {
    const url = new URL(this.api.baseURL + "/v1/me/stream");
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    // A browser's WebSocket cannot carry headers.
    url.searchParams.set("access_token", token);
    if (this.device) url.searchParams.set("device", this.device);
    return new Promise((resolve) => {
      let opened = false;
      let settled = false;
      /** @param {number} code */
      const settle = (code) => {
        if (settled) return;
        settled = true;
        this.sockets += 1;
        if (this.socket === socket) this.socket = null;
        resolve({ opened, code });
      };
      /** @type {WebSocket} */
      let socket;
      try {
        socket = new this.WebSocket(url.toString());
      } catch {
        resolve({ opened: false, code: 0 });
        return;
      }
      this.socket = socket;
      socket.onmessage = (message) => {
        if (this.generation !== generation) return;
        /** @type {any} */
        let event;
        try {
          event = JSON.parse(typeof message.data === "string" ? message.data : "");
        } catch {
          return;
        }
        if (event?.type === "ready") {
          opened = true;
          this.setConnectionState("connected");
          // Whatever happened while the stream was closed is in the syncs.
          const socketNumber = this.sockets;
          this.background(() => this.catchUp(event.position, () => this.generation === generation && this.sockets === socketNumber));
          return;
        }
        this.apply(event);
      };
      socket.onclose = (close) => settle(close.code);
      // A browser closes a socket after its error; Node's may not when the handshake failed.
      socket.onerror = () => {
        if (!opened) settle(1006);
      };
    });
  }

  /**
   * Applies one stream event (the stream is the fast path; syncs stay the truth).
   * @param {any} event
   */
  apply(event) {
    switch (event?.type) {
      case "notification.created":
      case "notification.updated": {
        const position = BigInt(event.notification.position);
        this.noteUnread(event.unread_count, event.channel_url, position);
        for (const collection of this.collectionsOf(event.channel_url)) {
          const { inserted, updated } = collection.apply([event.notification], [], true);
          collection.takeUnread(event.unread_count, position);
          this.saveCollection(collection);
          collection.changed(inserted, updated, []);
        }
        break;
      }
      case "notification.deleted": {
        const position = BigInt(event.position);
        this.noteUnread(event.unread_count, event.channel_url, position);
        for (const collection of this.collectionsOf(event.channel_url)) {
          const { removed } = collection.apply([], [event.notification_id], true, position);
          collection.takeUnread(event.unread_count, position);
          this.saveCollection(collection);
          collection.changed([], [], removed);
        }
        break;
      }
      case "channel.read": {
        const position = BigInt(event.position);
        this.noteUnread(event.unread_count, event.channel_url, position);
        for (const collection of this.collectionsOf(event.channel_url)) {
          collection.takeState(event, position);
          // The copies' statuses changed with it: the sync brings them, each by position.
          this.background(() => collection.refresh());
        }
        break;
      }
      case "delivery.updated": {
        const position = BigInt(event.position);
        for (const collection of this.collectionsOf(event.channel_url)) {
          /** @type {string[]} */
          const updated = [];
          for (const id of event.notification_ids) {
            const index = collection.indexOf(id);
            if (index === -1) continue;
            const held = collection.notifications[index];
            if (BigInt(held.position) > position || held.status !== "SENT") continue;
            collection.notifications[index] = { ...held, status: "DELIVERED", position: event.position };
            updated.push(id);
          }
          this.saveCollection(collection);
          collection.changed([], updated, []);
        }
        break;
      }
      case "channel.updated":
        this.channels.update(event);
        break;
      case "channel.deleted": {
        this.channels.remove(event.channel_url);
        const { [event.channel_url]: _gone, ...channels } = this.unread.channels;
        this.setUnread(this.unread.total, channels);
        break;
      }
      case "badge":
        if (event.badge !== this.unread.total) this.setUnread(event.badge, this.unread.channels);
        break;
      case "resync":
        this.refreshInBackground();
        break;
      default:
        break;
    }
  }

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
  async catchUp(position, current) {
    const target = position === undefined ? null : BigInt(position);
    const started = Date.now();
    /** @type {unknown} */
    let failure = null;
    for (let delay = 250; ; delay = Math.min(delay * 2, 5_000)) {
      try {
        await this.refreshAll();
        failure = null;
      } catch (error) {
        failure = error;
      }
      if (target === null || !current()) break;
      const behind = [...this.collections.values()].some((collection) => collection.token !== null && collection.syncedThrough < target);
      if (!behind || Date.now() - started + delay > 30_000) break;
      await this.pause(delay);
      if (!current()) break;
    }
    if (failure) throw failure;
  }

  /**
   * Waits `milliseconds`, or until the stream is closed.
   * @param {number} milliseconds
   * @returns {Promise<void>}
   */
  pause(milliseconds) {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.pauses.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, milliseconds);
      this.pauses.add(wake);
    });
  }

  /** @param {string} url */
  collectionsOf(url) {
    return [...this.collections.values()].filter((collection) => collection.channelURL === url && collection.token !== null);
  }

  /** @param {"disconnected" | "connecting" | "connected" | "waiting" | "failed"} state */
  setConnectionState(state) {
    if (state === this.connectionState) return;
    this.connectionState = state;
    this.dispatchEvent(new Event("connection"));
  }

  // The page ------------------------------------------------------------------------------------

  /**
   * Follows the page: when it comes back into view, or the browser back online, everything held is
   * synced and a stream that is waiting to reconnect goes at once. Returns the function that stops
   * following it.
   * @param {{document?: Document, window?: Window}} target
   */
  followPage({ document = globalThis.document, window = globalThis.window } = {}) {
    const visible = () => {
      if (document.visibilityState !== "visible") return;
      this.wakeReconnect?.();
      this.refreshInBackground();
    };
    const online = () => {
      this.wakeReconnect?.();
      this.refreshInBackground();
    };
    document.addEventListener("visibilitychange", visible);
    window.addEventListener("online", online);
    return () => {
      document.removeEventListener("visibilitychange", visible);
      window.removeEventListener("online", online);
    };
  }

  /** Everything, as the client refreshes by itself: a 429 waited out (up to 30 s), failures told. */
  refreshInBackground() {
    this.background(() => this.refreshAll());
  }

  /** @param {() => Promise<unknown>} work */
  background(work) {
    (async () => {
      for (let waits = 0; ; waits++) {
        try {
          await work();
          return;
        } catch (error) {
          if (this.closed) return;
          const retryAfter = error instanceof HeraldError && error.status === 429 ? error.retryAfter ?? 1 : null;
          if (retryAfter !== null && waits < this.rateLimitRetries && retryAfter <= 30) {
            await new Promise((resolve) => setTimeout(resolve, retryAfter * 1_000));
            continue;
          }
          this.dispatchEvent(new CustomEvent("error", { detail: error }));
          return;
        }
      }
    })();
  }

  // Web Push ------------------------------------------------------------------------------------

  /**
   * The channel's categories with the user's choices: whether each reaches their collection
   * (`inbox`) and may alert them (`push`), their own choice or the channel's default.
   * @param {string} channelURL
   * @returns {Promise<import("./types.js").CategoryPreference[]>}
   */
  async categoryPreferences(channelURL) {
    return (await this.api.categoryPreferences(channelURL)).categories;
  }

  /**
   * Chooses whether a category's notifications reach the user's collection and may alert them:
   * each of `inbox` and `push` given changes (`null`: back to the channel's default). Applies to
   * notifications sent afterwards.
   * @param {string} channelURL
   * @param {string} category
   * @param {{inbox?: boolean | null, push?: boolean | null}} choice
   * @returns {Promise<import("./types.js").CategoryPreference>}
   */
  setCategoryPreference(channelURL, category, choice) {
    return this.api.setCategoryPreference(channelURL, category, choice);
  }

  /**
   * The topics the user is subscribed to, in id order: every page, read now.
   * @returns {Promise<import("./types.js").Topic[]>}
   */
  async topics() {
    /** @type {import("./types.js").Topic[]} */
    const all = [];
    /** @type {string | null} */
    let after = null;
    do {
      /** @type {{topics: import("./types.js").Topic[], next?: string}} */
      const page = await this.api.topics(after);
      all.push(...page.topics);
      after = page.next ?? null;
    } while (after);
    return all;
  }

  /**
   * Follows a topic users may subscribe to themselves (otherwise a `HeraldError` with code
   * `topic_not_self_subscribe`); following one the user has changes nothing.
   * @param {string} topic
   * @returns {Promise<import("./types.js").Topic>}
   */
  follow(topic) {
    return this.api.followTopic(topic, null);
  }

  /**
   * Mutes or unmutes a topic the user is subscribed to, however they came to be: a muted topic's
   * sends give them nothing. A topic users may follow themselves is followed first if need be.
   * @param {string} topic
   * @param {boolean} muted
   * @returns {Promise<import("./types.js").Topic>}
   */
  setMuted(topic, muted) {
    return this.api.followTopic(topic, muted);
  }

  /**
   * Unfollows a topic users may subscribe to themselves.
   * @param {string} topic
   * @returns {Promise<void>}
   */
  async unfollow(topic) {
    await this.api.unfollowTopic(topic);
  }

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
  async enablePush(registration, options = {}) {
    if (globalThis.Notification && Notification.permission === "default") await Notification.requestPermission();
    const device = await subscribe(this, registration, options);
    this.device = device;
    this.api.onRenewed = () => {
      if (this.device === device) shareWithWorker(this, device).catch((error) => this.dispatchEvent(new CustomEvent("error", { detail: error })));
    };
    const worker = globalThis.navigator?.serviceWorker;
    if (worker && !this.stopFollowingWorker) {
      /** @param {MessageEvent} message */
      const refresh = (message) => {
        if (message.data?.type === "herald.refresh") this.refreshInBackground();
        // The worker's token was refused: it gets the one this page holds now (renewed, perhaps).
        if (message.data?.type === "herald.session-refused" && this.device) {
          shareWithWorker(this, this.device).catch((error) => this.dispatchEvent(new CustomEvent("error", { detail: error })));
        }
      };
      worker.addEventListener("message", refresh);
      this.stopFollowingWorker = () => worker.removeEventListener("message", refresh);
    }
    if (this.wantsStream) {
      await this.disconnect();
      this.connect();
    }
    return device;
  }

  /**
   * Ends what `enablePush` began: the device is removed from the user's, the browser's subscription
   * ended, the worker's credentials forgotten.
   * @param {ServiceWorkerRegistration} registration
   */
  async disablePush(registration) {
    await unsubscribe(this, registration);
    this.device = null;
    this.api.onRenewed = null;
    this.stopFollowingWorker?.();
    this.stopFollowingWorker = null;
  }

  // Keeping -------------------------------------------------------------------------------------

  /**
   * Reads what the cache kept of a new collection (a cache that fails is a cache without it).
   * @param {NotificationCollection} collection
   * @param {string} key
   */
  async restore(collection, key) {
    try {
      const snapshot = await /** @type {import("./cache.js").HeraldCache} */ (this.cache).load(key);
      if (snapshot) collection.restore(snapshot);
    } catch (error) {
      this.dispatchEvent(new CustomEvent("error", { detail: error }));
    } finally {
      collection.restoring = null;
    }
  }

  /**
   * Keeps the collection in the cache: once a burst of changes is over (the next task), the state it
   * has then; a write that fails is told (`error`), and the page goes on.
   * @param {NotificationCollection} collection
   */
  saveCollection(collection) {
    const cache = this.cache;
    const key = this.keyOf(collection);
    if (!cache || key === null || this.savesDue.has(key)) return;
    this.savesDue.add(key);
    setTimeout(() => {
      this.savesDue.delete(key);
      const snapshot = collection.client === this ? collection.snapshot() : null;
      if (snapshot) cache.save(key, snapshot).catch((error) => this.dispatchEvent(new CustomEvent("error", { detail: error })));
    }, 0);
  }

  /**
   * The key the client holds `collection` under, or null once it is forgotten.
   * @param {NotificationCollection} collection
   */
  keyOf(collection) {
    for (const [key, held] of this.collections) if (held === collection) return key;
    return null;
  }

  /** @param {ChannelList} _list */
  saveChannelList(_list) {}

  /** @param {NotificationCollection} collection */
  forget(collection) {
    for (const [key, held] of this.collections) if (held === collection) this.collections.delete(key);
  }

  /** Closes the stream and empties every collection and the list; the client cannot be used again. */
  async close() {
    this.stopFollowingWorker?.();
    this.stopFollowingWorker = null;
    await this.disconnect();
    this.closed = true;
    for (const collection of this.collections.values()) collection.detach();
    this.collections.clear();
    this.channels.detach();
  }
}
