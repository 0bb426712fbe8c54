// The shapes Herald's API answers with, as the client hands them on (snake_case, as on the wire),
// and the client's options. Types only: TypeScript reads them from here into `types/`.

/**
 * One notification as a user's collection holds it.
 * @typedef {object} HeraldNotification
 * @property {string} id Decimal; ids grow with time.
 * @property {string} template_key
 * @property {number} template_version
 * @property {Record<string, any>} data The template's data, rendered for this user.
 * @property {string} category
 * @property {string[]} tags
 * @property {string} [event_deadline]
 * @property {"SENT" | "DELIVERED" | "READ"} status
 * @property {boolean} archived The user archived it (it is read): it shows only in collections of
 *   status `archived` and `all`.
 * @property {HeraldAction[]} actions The buttons it offers.
 * @property {string[]} actions_done The ids of those the user pressed (on any device).
 * @property {string} created_at RFC 3339.
 * @property {number} created_at_ms
 * @property {string} updated_at
 * @property {number} updated_at_ms
 * @property {string} position This version's place in the user's change stream (decimal).
 */

/**
 * A button a notification offers; press it with `collection.press(action, id)`.
 * @typedef {object} HeraldAction
 * @property {string} id The id the page and Herald know it by.
 * @property {string} label
 * @property {string} [url] Where it leads; absent when the page handles it.
 */

/**
 * Which notifications of a channel a collection shows, by what the user did with them: `inbox` (the
 * default: everything not archived), `unread`, `read` (not archived), `archived`, `all`.
 * @typedef {"inbox" | "unread" | "read" | "archived" | "all"} InboxStatus
 */

/**
 * One category of a channel with the user's choice.
 * @typedef {object} CategoryPreference
 * @property {string} id
 * @property {string} name
 * @property {boolean} inbox Whether its notifications reach the user's collection.
 * @property {boolean} push Whether they may alert the user.
 * @property {boolean} inbox_default
 * @property {boolean} push_default
 * @property {boolean} inbox_chosen `inbox` is the user's own choice, not the default.
 * @property {boolean} push_chosen
 */

/**
 * A topic the user is subscribed to: sends to it reach them unless they muted it.
 * @typedef {object} Topic
 * @property {string} topic_id
 * @property {string} name
 * @property {boolean} self_subscribe Whether the user may unfollow it (the app's own topics can only be muted).
 * @property {boolean} muted
 * @property {string} subscribed_at RFC 3339.
 */

/**
 * The user's unread count, last read and last seen in one channel.
 * @typedef {object} ChannelState
 * @property {number} unread_count
 * @property {string | null} last_read_at
 * @property {string | null} last_seen_at Notifications created after it are new.
 */

/**
 * A channel as a collection describes it.
 * @typedef {object} ChannelInfo
 * @property {string} channel_url
 * @property {"feed" | "chat"} kind
 * @property {string} name
 * @property {string} cover_url
 * @property {string} custom_type
 */

/**
 * One channel of the user's channel list.
 * @typedef {object} ChannelListEntry
 * @property {string} channel_url
 * @property {"feed" | "chat"} kind
 * @property {string} name
 * @property {string} cover_url
 * @property {string} custom_type
 * @property {number} unread_count
 * @property {string} last_activity_at
 * @property {HeraldNotification} [last_notification] A chat channel's newest.
 */

/**
 * What a collection's `change` event tells: the ids that came, changed and went.
 * @typedef {object} CollectionChange
 * @property {string[]} inserted
 * @property {string[]} updated
 * @property {string[]} removed
 */

/**
 * @typedef {object} HeraldClientOptions
 * @property {string} baseURL Herald's URL.
 * @property {string} [sessionToken] The user's session token (your backend asks Herald for it).
 * @property {() => Promise<string>} [fetchSessionToken] Asked for a new token when Herald refuses the
 *   one held (expired, revoked), or for the first one.
 * @property {string} [device] This page's device id (its Web Push subscription's), named on syncs
 *   and the stream so that Herald does not push to it while it is open.
 * @property {typeof fetch} [fetch]
 * @property {typeof WebSocket} [WebSocket]
 * @property {number} [pageSize] Notifications per page (at most 100; 30 by default).
 * @property {{initial?: number, maximum?: number}} [reconnect] The stream's reconnection delays,
 *   milliseconds (1 s doubling to 60 s by default, with full jitter).
 * @property {number} [rateLimitRetries] How many 429s a refresh the client starts by itself waits
 *   out (3 by default).
 * @property {import("./cache.js").HeraldCache} [cache] Where collections are kept between page loads
 *   (an `IndexedDBCache` named after the signed-in user): a collection shows its last state at once
 *   and syncs on from its token.
 */

export {};
