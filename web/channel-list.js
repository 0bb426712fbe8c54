import { Coalescing } from "./coalescing.js";

/**
 * The user's channels — chat channels newest activity first, then feed channels by URL — kept up to
 * date by the list's own change log: a refresh asks only for what changed since its token, and
 * starts over when the server cannot continue it.
 *
 * Event: `change` after every refresh that changed something.
 */
export class ChannelList extends EventTarget {
  /** @param {import("./client.js").HeraldClient} client */
  constructor(client) {
    super();
    /** @type {import("./types.js").ChannelListEntry[]} Chat channels, newest activity first. */
    this.chat = [];
    /** @type {import("./types.js").ChannelListEntry[]} Feed channels, by URL. */
    this.feed = [];
    /** @type {import("./client.js").HeraldClient | null} */
    this.client = client;
    /** @type {string | null} */
    this.token = null;
    /** One refresh at a time. */
    this.refreshing = new Coalescing(() => this.refreshOnce());
  }

  /**
   * The whole list (no token yet, or the token cannot continue) or the changes since the token;
   * resolves to whether anything changed. One refresh at a time, as a collection's.
   * @returns {Promise<boolean>}
   */
  refresh() {
    return this.refreshing.run();
  }

  async refreshOnce() {
    const client = this.client;
    if (!client) throw new Error("The channel list's client was closed.");
    let whole = this.token === null;
    let answer = await client.api.channels({ token: this.token, device: client.device });
    if (!answer.is_live) {
      answer = await client.api.channels({ device: client.device });
      whole = true;
    }
    if (this.client !== client) throw new Error("The channel list's client was closed.");
    const before = JSON.stringify([this.chat, this.feed]);
    /** @type {Map<string, import("./types.js").ChannelListEntry>} */
    const entries = whole ? new Map() : new Map([...this.chat, ...this.feed].map((entry) => [entry.channel_url, entry]));
    for (const url of answer.deleted) entries.delete(url);
    for (const entry of [...answer.chat, ...answer.feed]) entries.set(entry.channel_url, entry);
    this.arrange([...entries.values()]);
    this.token = answer.next_token;
    client.saveChannelList(this);
    const changed = before !== JSON.stringify([this.chat, this.feed]);
    if (changed) this.dispatchEvent(new Event("change"));
    return changed;
  }

  /**
   * Orders entries as the server does.
   * @param {import("./types.js").ChannelListEntry[]} entries
   */
  arrange(entries) {
    this.chat = entries
      .filter((entry) => entry.kind === "chat")
      .sort((a, b) => {
        const [x, y] = [Date.parse(a.last_activity_at), Date.parse(b.last_activity_at)];
        return x !== y ? y - x : a.channel_url < b.channel_url ? -1 : a.channel_url > b.channel_url ? 1 : 0;
      });
    this.feed = entries
      .filter((entry) => entry.kind === "feed")
      .sort((a, b) => (a.channel_url < b.channel_url ? -1 : a.channel_url > b.channel_url ? 1 : 0));
  }

  /**
   * A live `channel.updated`: the entry's definition, if listed.
   * @param {{channel_url: string, kind: "feed" | "chat", name: string, cover_url: string, custom_type: string}} info
   */
  update(info) {
    const entries = [...this.chat, ...this.feed];
    const index = entries.findIndex((entry) => entry.channel_url === info.channel_url);
    if (index === -1) return;
    entries[index] = { ...entries[index], kind: info.kind, name: info.name, cover_url: info.cover_url, custom_type: info.custom_type };
    this.arrange(entries);
    this.dispatchEvent(new Event("change"));
  }

  /**
   * A live `channel.deleted`.
   * @param {string} url
   */
  remove(url) {
    const entries = [...this.chat, ...this.feed];
    if (!entries.some((entry) => entry.channel_url === url)) return;
    this.arrange(entries.filter((entry) => entry.channel_url !== url));
    this.dispatchEvent(new Event("change"));
  }

  /** Empties the list and cuts it from its client. */
  detach() {
    this.client = null;
    this.chat = [];
    this.feed = [];
    this.token = null;
    this.dispatchEvent(new Event("change"));
  }
}
