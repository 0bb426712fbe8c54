/**
 * Herald's web client: a user's notification collections, channel list and unread counts, kept in
 * step with a Herald server over its sync protocol and live stream. No dependencies, no build step.
 *
 * @module herald
 */
export { HeraldClient } from "./client.js";
export { NotificationCollection } from "./collection.js";
export { ChannelList } from "./channel-list.js";
export { HeraldError } from "./errors.js";
export { HeraldAPI } from "./api.js";
export { IndexedDBCache } from "./cache.js";
