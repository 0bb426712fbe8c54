export { HeraldClient } from "./client.js";
export { NotificationCollection } from "./collection.js";
export { ChannelList } from "./channel-list.js";
export { HeraldError } from "./errors.js";
export { HeraldAPI } from "./api.js";
export { IndexedDBCache } from "./cache.js";
