/**
 * Herald's user routes over `fetch`: the session token on every request, a new one asked of the
 * app once when the server refuses it, and every error answer turned into a `HeraldError`.
 */
export class HeraldAPI {
    /**
     * The JSON of a 2xx answer, or the `HeraldError` of another.
     * @param {Response} response
     * @param {string} text Its body.
     */
    static answer(response: Response, text: string): any;
    /** @param {string} channelURL */
    static channelPath(channelURL: string): string;
    /**
     * The status as the query sends it: none for the default.
     * @param {import("./types.js").InboxStatus | undefined} status
     */
    static statusQuery(status: import("./types.js").InboxStatus | undefined): "unread" | "read" | "archived" | "all" | undefined;
    /**
     * @param {object} options
     * @param {string} options.baseURL Herald's URL (`https://herald.example.com`).
     * @param {string} [options.sessionToken] The session token to start with.
     * @param {() => Promise<string>} [options.fetchSessionToken] Asked for a new session token when the
     *   server refuses the one held (and for the first one, if none was given).
     * @param {typeof fetch} [options.fetch]
     * @param {number} [options.timeout] Milliseconds before a request is given up (`network`).
     */
    constructor({ baseURL, sessionToken, fetchSessionToken, fetch: fetcher, timeout }: {
        baseURL: string;
        sessionToken?: string | undefined;
        fetchSessionToken?: (() => Promise<string>) | undefined;
        fetch?: typeof fetch | undefined;
        timeout?: number | undefined;
    });
    baseURL: string;
    token: string | null;
    fetchSessionToken: (() => Promise<string>) | null;
    fetch: typeof fetch;
    timeout: number;
    /** @type {Promise<string> | null} */
    renewing: Promise<string> | null;
    /** Called when the server refused the session and no new token could be had. */
    onUnauthorized: (() => void) | null;
    /** Called with each new token `fetchSessionToken` gives. */
    onRenewed: ((token: string) => void) | null;
    /** The session token in use, asked of the app when there is none yet. */
    currentToken(): Promise<string>;
    /**
     * A new token from the app, in place of `refused` (one request for every caller that saw it
     * refused at once).
     * @param {string | null} refused
     */
    renewToken(refused: string | null): Promise<string>;
    /**
     * One request; the parsed JSON answer (null for 204). Throws `HeraldError`.
     * @param {string} method
     * @param {string} path
     * @param {{query?: Record<string, string | number | undefined | null>, body?: unknown, device?: string | null, signal?: AbortSignal}} options
     * @returns {Promise<any>}
     */
    request(method: string, path: string, { query, body, device, signal }?: {
        query?: Record<string, string | number | undefined | null>;
        body?: unknown;
        device?: string | null;
        signal?: AbortSignal;
    }): Promise<any>;
    /**
     * @param {string} method
     * @param {URL} url
     * @param {string} token
     * @param {unknown} body
     * @param {string | null | undefined} device
     * @param {AbortSignal | undefined} signal
     */
    send(method: string, url: URL, token: string, body: unknown, device: string | null | undefined, signal: AbortSignal | undefined): Promise<{
        response: Response;
        text: string;
    }>;
    /**
     * The first page (no token) or the changes since `token`.
     * @param {string} channelURL
     * @param {{token?: string | null, limit?: number, category?: string | null, status?: import("./types.js").InboxStatus, device?: string | null, wait?: number}} options
     */
    sync(channelURL: string, { token, limit, category, status, device, wait }?: {
        token?: string | null;
        limit?: number;
        category?: string | null;
        status?: import("./types.js").InboxStatus;
        device?: string | null;
        wait?: number;
    }): Promise<any>;
    /**
     * @param {string} channelURL
     * @param {{before: string, limit?: number, category?: string | null, status?: import("./types.js").InboxStatus}} options
     */
    older(channelURL: string, { before, limit, category, status }: {
        before: string;
        limit?: number;
        category?: string | null;
        status?: import("./types.js").InboxStatus;
    }): Promise<any>;
    /**
     * A change of the user's own states of notifications: `archive` (`{notification_ids}` or
     * `{scope: "read" | "all"}`), `unarchive`, `unread`, `delete` (`{notification_ids}`). Resolves to
     * the channel's state after, with the change's position.
     * @param {string} channelURL
     * @param {"archive" | "unarchive" | "unread" | "delete"} change
     * @param {{notification_ids?: string[], scope?: "read" | "all"}} body
     * @returns {Promise<import("./types.js").ChannelState & {position?: string}>}
     */
    changeState(channelURL: string, change: "archive" | "unarchive" | "unread" | "delete", body: {
        notification_ids?: string[];
        scope?: "read" | "all";
    }): Promise<import("./types.js").ChannelState & {
        position?: string;
    }>;
    /**
     * Presses a notification's action; resolves to the channel's state after, with its position.
     * @param {string} notificationID
     * @param {string} action
     * @returns {Promise<import("./types.js").ChannelState & {position?: string}>}
     */
    pressAction(notificationID: string, action: string): Promise<import("./types.js").ChannelState & {
        position?: string;
    }>;
    /**
     * @param {string} channelURL
     * @param {string[] | null} [ids]
     */
    markRead(channelURL: string, ids?: string[] | null | undefined): Promise<any>;
    /**
     * @param {string} channelURL
     * @param {Date | null} [at]
     */
    markSeen(channelURL: string, at?: Date | null | undefined): Promise<any>;
    unread(): Promise<any>;
    /** @param {{token?: string | null, device?: string | null}} options */
    channels({ token, device }?: {
        token?: string | null;
        device?: string | null;
    }): Promise<any>;
    /**
     * @param {"viewed" | "clicked"} type
     * @param {string[]} ids
     */
    logEvents(type: "viewed" | "clicked", ids: string[]): Promise<any>;
    /** @param {object} receipt A push's `herald` object, as `{herald: …}`, or `{notification_ids}`. */
    delivered(receipt: object): Promise<any>;
    /** @param {object} device */
    registerDevice(device: object): Promise<any>;
    /** @param {string} id */
    removeDevice(id: string): Promise<any>;
    webPushKey(): Promise<any>;
    /** @param {string} channelURL */
    categoryPreferences(channelURL: string): Promise<any>;
    /**
     * @param {string} channelURL
     * @param {string} category
     * @param {{inbox?: boolean | null, push?: boolean | null}} choice
     */
    setCategoryPreference(channelURL: string, category: string, choice: {
        inbox?: boolean | null;
        push?: boolean | null;
    }): Promise<any>;
    /** @param {string | null} [after] */
    topics(after?: string | null | undefined): Promise<any>;
    /**
     * @param {string} topic
     * @param {boolean | null} [muted]
     */
    followTopic(topic: string, muted?: boolean | null | undefined): Promise<any>;
    /** @param {string} topic */
    unfollowTopic(topic: string): Promise<any>;
}
