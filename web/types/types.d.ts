/**
 * One notification as a user's collection holds it.
 */
export type HeraldNotification = {
    /**
     * Decimal; ids grow with time.
     */
    id: string;
    template_key: string;
    template_version: number;
    /**
     * The template's data, rendered for this user.
     */
    data: Record<string, any>;
    category: string;
    tags: string[];
    event_deadline?: string | undefined;
    status: "SENT" | "DELIVERED" | "READ";
    /**
     * The user archived it (it is read): it shows only in collections of
     * status `archived` and `all`.
     */
    archived: boolean;
    /**
     * The buttons it offers.
     */
    actions: HeraldAction[];
    /**
     * The ids of those the user pressed (on any device).
     */
    actions_done: string[];
    /**
     * RFC 3339.
     */
    created_at: string;
    created_at_ms: number;
    updated_at: string;
    updated_at_ms: number;
    /**
     * This version's place in the user's change stream (decimal).
     */
    position: string;
};
/**
 * A button a notification offers; press it with `collection.press(action, id)`.
 */
export type HeraldAction = {
    /**
     * The id the page and Herald know it by.
     */
    id: string;
    label: string;
    /**
     * Where it leads; absent when the page handles it.
     */
    url?: string | undefined;
};
/**
 * Which notifications of a channel a collection shows, by what the user did with them: `inbox` (the
 * default: everything not archived), `unread`, `read` (not archived), `archived`, `all`.
 */
export type InboxStatus = "inbox" | "unread" | "read" | "archived" | "all";
/**
 * One category of a channel with the user's choice.
 */
export type CategoryPreference = {
    id: string;
    name: string;
    /**
     * Whether its notifications reach the user's collection.
     */
    inbox: boolean;
    /**
     * Whether they may alert the user.
     */
    push: boolean;
    inbox_default: boolean;
    push_default: boolean;
    /**
     * `inbox` is the user's own choice, not the default.
     */
    inbox_chosen: boolean;
    push_chosen: boolean;
};
/**
 * A topic the user is subscribed to: sends to it reach them unless they muted it.
 */
export type Topic = {
    topic_id: string;
    name: string;
    /**
     * Whether the user may unfollow it (the app's own topics can only be muted).
     */
    self_subscribe: boolean;
    muted: boolean;
    /**
     * RFC 3339.
     */
    subscribed_at: string;
};
/**
 * The user's unread count, last read and last seen in one channel.
 */
export type ChannelState = {
    unread_count: number;
    last_read_at: string | null;
    /**
     * Notifications created after it are new.
     */
    last_seen_at: string | null;
};
/**
 * A channel as a collection describes it.
 */
export type ChannelInfo = {
    channel_url: string;
    kind: "feed" | "chat";
    name: string;
    cover_url: string;
    custom_type: string;
};
/**
 * One channel of the user's channel list.
 */
export type ChannelListEntry = {
    channel_url: string;
    kind: "feed" | "chat";
    name: string;
    cover_url: string;
    custom_type: string;
    unread_count: number;
    last_activity_at: string;
    /**
     * A chat channel's newest.
     */
    last_notification?: HeraldNotification | undefined;
};
/**
 * What a collection's `change` event tells: the ids that came, changed and went.
 */
export type CollectionChange = {
    inserted: string[];
    updated: string[];
    removed: string[];
};
export type HeraldClientOptions = {
    /**
     * Herald's URL.
     */
    baseURL: string;
    /**
     * The user's session token (your backend asks Herald for it).
     */
    sessionToken?: string | undefined;
    /**
     * Asked for a new token when Herald refuses the
     * one held (expired, revoked), or for the first one.
     */
    fetchSessionToken?: (() => Promise<string>) | undefined;
    /**
     * This page's device id (its Web Push subscription's), named on syncs
     * and the stream so that Herald does not push to it while it is open.
     */
    device?: string | undefined;
    fetch?: typeof fetch | undefined;
    WebSocket?: {
        new (url: string | URL, protocols?: string | string[] | undefined): WebSocket;
        prototype: WebSocket;
        readonly CLOSED: number;
        readonly CLOSING: number;
        readonly CONNECTING: number;
        readonly OPEN: number;
    } | undefined;
    /**
     * Notifications per page (at most 100; 30 by default).
     */
    pageSize?: number | undefined;
    /**
     * The stream's reconnection delays,
     * milliseconds (1 s doubling to 60 s by default, with full jitter).
     */
    reconnect?: {
        initial?: number | undefined;
        maximum?: number | undefined;
    } | undefined;
    /**
     * How many 429s a refresh the client starts by itself waits
     * out (3 by default).
     */
    rateLimitRetries?: number | undefined;
    /**
     * Where collections are kept between page loads
     * (an `IndexedDBCache` named after the signed-in user): a collection shows its last state at once
     * and syncs on from its token.
     */
    cache?: import("./cache.js").HeraldCache | undefined;
};
