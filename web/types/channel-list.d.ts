/**
 * The user's channels — chat channels newest activity first, then feed channels by URL — kept up to
 * date by the list's own change log: a refresh asks only for what changed since its token, and
 * starts over when the server cannot continue it.
 *
 * Event: `change` after every refresh that changed something.
 */
export class ChannelList extends EventTarget {
    /** @param {import("./client.js").HeraldClient} client */
    constructor(client: import("./client.js").HeraldClient);
    /** @type {import("./types.js").ChannelListEntry[]} Chat channels, newest activity first. */
    chat: import("./types.js").ChannelListEntry[];
    /** @type {import("./types.js").ChannelListEntry[]} Feed channels, by URL. */
    feed: import("./types.js").ChannelListEntry[];
    /** @type {import("./client.js").HeraldClient | null} */
    client: import("./client.js").HeraldClient | null;
    /** @type {string | null} */
    token: string | null;
    /** One refresh at a time. */
    refreshing: Coalescing;
    /**
     * The whole list (no token yet, or the token cannot continue) or the changes since the token;
     * resolves to whether anything changed. One refresh at a time, as a collection's.
     * @returns {Promise<boolean>}
     */
    refresh(): Promise<boolean>;
    refreshOnce(): Promise<boolean>;
    /**
     * Orders entries as the server does.
     * @param {import("./types.js").ChannelListEntry[]} entries
     */
    arrange(entries: import("./types.js").ChannelListEntry[]): void;
    /**
     * A live `channel.updated`: the entry's definition, if listed.
     * @param {{channel_url: string, kind: "feed" | "chat", name: string, cover_url: string, custom_type: string}} info
     */
    update(info: {
        channel_url: string;
        kind: "feed" | "chat";
        name: string;
        cover_url: string;
        custom_type: string;
    }): void;
    /**
     * A live `channel.deleted`.
     * @param {string} url
     */
    remove(url: string): void;
    /** Empties the list and cuts it from its client. */
    detach(): void;
}
import { Coalescing } from "./coalescing.js";
