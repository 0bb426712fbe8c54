import { HeraldError } from "./errors.js";

/**
 * Herald's user routes over `fetch`: the session token on every request, a new one asked of the
 * app once when the server refuses it, and every error answer turned into a `HeraldError`.
 */
export class HeraldAPI {
  /**
   * @param {object} options
   * @param {string} options.baseURL Herald's URL (`https://herald.example.com`).
   * @param {string} [options.sessionToken] The session token to start with.
   * @param {() => Promise<string>} [options.fetchSessionToken] Asked for a new session token when the
   *   server refuses the one held (and for the first one, if none was given).
   * @param {typeof fetch} [options.fetch]
   * @param {number} [options.timeout] Milliseconds before a request is given up (`network`).
   */
  constructor({ baseURL, sessionToken, fetchSessionToken, fetch: fetcher, timeout = 30_000 }) {
    if (!baseURL) throw new TypeError("baseURL is required");
    this.baseURL = baseURL.replace(/\/+$/, "");
    this.token = sessionToken ?? null;
    this.fetchSessionToken = fetchSessionToken ?? null;
    this.fetch = fetcher ?? globalThis.fetch.bind(globalThis);
    this.timeout = timeout;
    /** @type {Promise<string> | null} */
    this.renewing = null;
    /** Called when the server refused the session and no new token could be had. */
    this.onUnauthorized = /** @type {(() => void) | null} */ (null);
    /** Called with each new token `fetchSessionToken` gives. */
    this.onRenewed = /** @type {((token: string) => void) | null} */ (null);
  }

  /** The session token in use, asked of the app when there is none yet. */
  async currentToken() {
    if (this.token) return this.token;
    return this.renewToken(null);
  }

  /**
   * A new token from the app, in place of `refused` (one request for every caller that saw it
   * refused at once).
   * @param {string | null} refused
   */
  async renewToken(refused) {
    if (this.token && this.token !== refused) return this.token;
    if (!this.fetchSessionToken) throw new HeraldError("The session token was refused and no fetchSessionToken was given.", { status: 401, code: "unauthorized" });
    if (!this.renewing) {
      this.renewing = (async () => {
        try {
          const token = await /** @type {() => Promise<string>} */ (this.fetchSessionToken)();
          if (typeof token !== "string" || token === "") throw new TypeError("fetchSessionToken returned no token");
          this.token = token;
          this.onRenewed?.(token);
          return token;
        } finally {
          this.renewing = null;
        }
      })();
    }
    return this.renewing;
  }

  /**
   * One request; the parsed JSON answer (null for 204). Throws `HeraldError`.
   * @param {string} method
   * @param {string} path
   * @param {{query?: Record<string, string | number | undefined | null>, body?: unknown, device?: string | null, signal?: AbortSignal}} options
   * @returns {Promise<any>}
   */
  async request(method, path, { query, body, device, signal } = {}) {
    const url = new URL(this.baseURL + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    let token = await this.currentToken();
    for (let attempt = 0; ; attempt++) {
      const { response, text } = await this.send(method, url, token, body, device, signal);
      if (response.status === 401 && attempt === 0 && this.fetchSessionToken) {
        try {
          token = await this.renewToken(token);
          continue;
        } catch (error) {
          this.onUnauthorized?.();
          throw error instanceof HeraldError ? error : new HeraldError("A new session token could not be had.", { status: 401, code: "unauthorized", cause: error });
        }
      }
      if (response.status === 401) this.onUnauthorized?.();
      return HeraldAPI.answer(response, text);
    }
  }

  /**
   * @param {string} method
   * @param {URL} url
   * @param {string} token
   * @param {unknown} body
   * @param {string | null | undefined} device
   * @param {AbortSignal | undefined} signal
   */
  async send(method, url, token, body, device, signal) {
    /** @type {Record<string, string>} */
    const headers = { Authorization: `Bearer ${token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (device) headers["Herald-Device"] = device;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error(`no answer in ${this.timeout} ms`)), this.timeout);
    const combined = signal ? anySignal([signal, timeout.signal]) : { signal: timeout.signal, release: () => {} };
    try {
      const response = await this.fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: combined.signal,
        // Herald takes a bearer token, never cookies.
        credentials: "omit",
        // A write (a read mark, a click) still goes when the page navigates away right after it.
        keepalive: method !== "GET",
      });
      // Read within the same deadline: a body that stalls is no answer either.
      return { response, text: await response.text() };
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new HeraldError(`Herald could not be reached: ${error instanceof Error ? error.message : error}`, { cause: error });
    } finally {
      clearTimeout(timer);
      combined.release();
    }
  }

  /**
   * The JSON of a 2xx answer, or the `HeraldError` of another.
   * @param {Response} response
   * @param {string} text Its body.
   */
  static answer(response, text) {
    if (response.ok) {
      if (text === "") return null;
      try {
        return JSON.parse(text);
      } catch (error) {
        throw new HeraldError("The answer was not JSON (a proxy's page?).", { status: response.status, code: "invalid_answer", cause: error });
      }
    }
    let code = "http_" + response.status;
    let message = `HTTP ${response.status}`;
    try {
      const error = JSON.parse(text).error;
      if (typeof error?.code === "string") code = error.code;
      if (typeof error?.message === "string") message = error.message;
    } catch {
      // Not Herald's JSON (a proxy's page): the status says enough.
    }
    const seconds = Number.parseInt(response.headers.get("Retry-After") ?? "", 10);
    throw new HeraldError(message, { status: response.status, code, retryAfter: Number.isFinite(seconds) ? seconds : null });
  }

  // Routes --------------------------------------------------------------------------------------

  /** @param {string} channelURL */
  static channelPath(channelURL) {
    return `/v1/me/channels/${encodeURIComponent(channelURL)}`;
  }

  /**
   * The first page (no token) or the changes since `token`.
   * @param {string} channelURL
   * @param {{token?: string | null, limit?: number, category?: string | null, status?: import("./types.js").InboxStatus, device?: string | null, wait?: number}} options
   */
  sync(channelURL, { token, limit, category, status, device, wait } = {}) {
    return this.request("GET", HeraldAPI.channelPath(channelURL) + "/collection", {
      query: { token, limit, category, status: HeraldAPI.statusQuery(status), wait },
      device,
    });
  }

  /**
   * @param {string} channelURL
   * @param {{before: string, limit?: number, category?: string | null, status?: import("./types.js").InboxStatus}} options
   */
  older(channelURL, { before, limit, category, status }) {
    return this.request("GET", HeraldAPI.channelPath(channelURL) + "/notifications", {
      query: { before, limit, category, status: HeraldAPI.statusQuery(status) },
    });
  }

  /**
   * The status as the query sends it: none for the default.
   * @param {import("./types.js").InboxStatus | undefined} status
   */
  static statusQuery(status) {
    return status === undefined || status === "inbox" ? undefined : status;
  }

  /**
   * A change of the user's own states of notifications: `archive` (`{notification_ids}` or
   * `{scope: "read" | "all"}`), `unarchive`, `unread`, `delete` (`{notification_ids}`). Resolves to
   * the channel's state after, with the change's position.
   * @param {string} channelURL
   * @param {"archive" | "unarchive" | "unread" | "delete"} change
   * @param {{notification_ids?: string[], scope?: "read" | "all"}} body
   * @returns {Promise<import("./types.js").ChannelState & {position?: string}>}
   */
  changeState(channelURL, change, body) {
    return this.request("POST", HeraldAPI.channelPath(channelURL) + `/${change}`, { body });
  }

  /**
   * Presses a notification's action; resolves to the channel's state after, with its position.
   * @param {string} notificationID
   * @param {string} action
   * @returns {Promise<import("./types.js").ChannelState & {position?: string}>}
   */
  pressAction(notificationID, action) {
    return this.request("POST", `/v1/me/notifications/${encodeURIComponent(notificationID)}/actions/${encodeURIComponent(action)}`);
  }

  /**
   * @param {string} channelURL
   * @param {string[] | null} [ids]
   */
  markRead(channelURL, ids) {
    return this.request("POST", HeraldAPI.channelPath(channelURL) + "/read", { body: ids ? { notification_ids: ids } : {} });
  }

  /**
   * @param {string} channelURL
   * @param {Date | null} [at]
   */
  markSeen(channelURL, at) {
    return this.request("POST", HeraldAPI.channelPath(channelURL) + "/seen", { body: at ? { seen_at: at.toISOString() } : {} });
  }

  unread() {
    return this.request("GET", "/v1/me/unread");
  }

  /** @param {{token?: string | null, device?: string | null}} options */
  channels({ token, device } = {}) {
    return this.request("GET", "/v1/me/channels", { query: { token }, device });
  }

  /**
   * @param {"viewed" | "clicked"} type
   * @param {string[]} ids
   */
  logEvents(type, ids) {
    return this.request("POST", "/v1/me/events", { body: { type, notification_ids: ids } });
  }

  /** @param {object} receipt A push's `herald` object, as `{herald: …}`, or `{notification_ids}`. */
  delivered(receipt) {
    return this.request("POST", "/v1/me/delivered", { body: receipt });
  }

  /** @param {object} device */
  registerDevice(device) {
    return this.request("POST", "/v1/me/devices", { body: device });
  }

  /** @param {string} id */
  removeDevice(id) {
    return this.request("DELETE", `/v1/me/devices/${encodeURIComponent(id)}`);
  }

  webPushKey() {
    return this.request("GET", "/v1/webpush/key");
  }

  /** @param {string} channelURL */
  categoryPreferences(channelURL) {
    return this.request("GET", HeraldAPI.channelPath(channelURL) + "/categories");
  }

  /**
   * @param {string} channelURL
   * @param {string} category
   * @param {{inbox?: boolean | null, push?: boolean | null}} choice
   */
  setCategoryPreference(channelURL, category, choice) {
    return this.request("PUT", HeraldAPI.channelPath(channelURL) + `/categories/${encodeURIComponent(category)}`, { body: choice });
  }

  /** @param {string | null} [after] */
  topics(after) {
    return this.request("GET", "/v1/me/topics", { query: { limit: 200, after } });
  }

  /**
   * @param {string} topic
   * @param {boolean | null} [muted]
   */
  followTopic(topic, muted) {
    return this.request("PUT", `/v1/me/topics/${encodeURIComponent(topic)}`, { body: muted == null ? undefined : { muted } });
  }

  /** @param {string} topic */
  unfollowTopic(topic) {
    return this.request("DELETE", `/v1/me/topics/${encodeURIComponent(topic)}`);
  }
}

/**
 * A signal aborted when any of `signals` is (`AbortSignal.any` is newer than some browsers this
 * client runs in), and `release`, which stops listening to them: a caller's signal may outlive many
 * requests, and must not keep a listener for each.
 * @param {AbortSignal[]} signals
 * @returns {{signal: AbortSignal, release: () => void}}
 */
function anySignal(signals) {
  const controller = new AbortController();
  /** @type {(() => void)[]} */
  const releases = [];
  for (const signal of signals) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    const abort = () => controller.abort(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    releases.push(() => signal.removeEventListener("abort", abort));
  }
  return { signal: controller.signal, release: () => releases.forEach((release) => release()) };
}
