// A model test of the web client against a real `herald serve`: seeded random histories of sends
// (two channels, two categories, to the user alone or with another), edits, deletions, reads here and
// on another device, archives, unarchives, unread marks, the user's own deletions and buttons pressed (the model keeps
// collections of the inbox, the archive and the unread ones), resets, older pages, the stream opened and closed, the browser going offline and
// back, and the page reloaded (a new client). At every quiet point — nothing more is being sent, the
// client has refreshed — every collection the client holds equals the newest part of a fresh load (all
// of it once nothing older is left to page in), state and unread counts included.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { HeraldClient } from "../herald.js";
import { HeraldServer, SeparateWebSocket, waitUntil } from "../test-support/herald-server.mjs";

/** @type {HeraldServer} */
let server;
before(async () => {
  server = await HeraldServer.start();
});
after(async () => {
  await server?.close();
});

/** A small seeded generator (mulberry32): the same seed, the same history. */
function generator(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    /** @param {number} n */
    below: (n) => Math.floor(next() * n),
    /** @template T @param {T[]} items @returns {T} */
    pick: (items) => items[Math.floor(next() * items.length)],
    coin: () => next() < 0.5,
  };
}

// One seed of 1,000 steps in the suite (its CI time is counted); HERALD_MODEL_SEEDS=20261127,7,… runs
// more.
const seeds = (process.env.HERALD_MODEL_SEEDS ?? "20261127").split(",").map(Number);
for (const seed of seeds) {
  test(`random histories end every quiet point equal to a fresh load (seed ${seed})`, { timeout: 600_000 }, async () => {
    const random = generator(seed);
    const feed = `web-model-feed-${seed}`;
    const chat = `web-model-chat-${seed}`;
    const user = `web-model-user-${seed}`;
    const other = `web-model-other-${seed}`;
    await server.channel(feed);
    await server.channel(chat, { kind: "chat" });
    const session = await server.session(user);
    await server.session(other);
    /** The collections the model keeps open. */
    /** @type {[string, string | null, import("../types.js").InboxStatus][]} */
    const kept = [
      [feed, null, "inbox"],
      [feed, "promo", "inbox"],
      [chat, null, "inbox"],
      [feed, null, "archived"],
      [feed, null, "unread"],
    ];
    const makeClient = () => new HeraldClient({ baseURL: server.url, sessionToken: session, WebSocket: SeparateWebSocket });
    /** @param {HeraldClient} client */
    const open = async (client) => {
      const collections = kept.map(([channel, category, status]) => {
        const collection = client.collection(channel, { category, status });
        collection.pageSize = 7;
        return collection;
      });
      for (const collection of collections) await collection.refresh();
      return collections;
    };
    let client = makeClient();
    const tablet = makeClient();
    try {
      let held = await open(client);
      /** @type {string[]} */ const sent = [];
      const deleted = new Set();
      /** @type {Record<string, number>} */ const counts = {};
      /** @type {string[]} */ const history = [];
      const count = (/** @type {string} */ kind, /** @type {string} */ what) => {
        counts[kind] = (counts[kind] ?? 0) + 1;
        history.push(what);
      };

      for (let step = 0; step < 1_000; step++) {
        const roll = random.below(100);
        const live = sent.filter((id) => !deleted.has(id));
        if (roll < 30) {
          const [channel, category] = random.pick([
            [feed, "news"],
            [feed, "promo"],
            [chat, "news"],
          ]);
          const targets = random.coin() ? [user] : [user, other];
          sent.push(await server.send(channel, targets, `s${step}`, { category }));
          count("send", `${step} send ${sent[sent.length - 1]} ${channel}/${category} ${targets}`);
        } else if (roll < 40 && live.length > 0) {
          const id = random.pick(live);
          await server.admin("PATCH", `/v1/notifications/${id}`, { variables: { title: `edit${step}` } });
          count("edit", `${step} edit ${id}`);
        } else if (roll < 47 && live.length > 0) {
          const id = random.pick(live);
          await server.admin("DELETE", `/v1/notifications/${id}`);
          deleted.add(id);
          count("delete", `${step} delete ${id}`);
        } else if (roll < 55) {
          // A read on another device of the same user, or here; all, or a few ids.
          const reader = random.coin() ? tablet : client;
          const [channel, category, status] = random.pick(kept);
          const collection = reader.collection(channel, { category, status });
          await collection.refresh();
          const ids = collection.notifications.map((notification) => notification.id).slice(0, 1 + random.below(3));
          await collection.markRead(random.coin() || ids.length === 0 ? null : ids);
          count("read", `${step} read ${reader === tablet ? "tablet" : "client"} ${channel}/${category ?? "-"}`);
        } else if (roll < 57) {
          const channel = random.coin() ? feed : chat;
          await server.admin("POST", `/v1/users/${user}/channels/${channel}/reset`);
          count("reset", `${step} reset ${channel}`);
        } else if (roll < 63) {
          if (client.stream === null) {
            client.connect();
            await waitUntil("the stream to open", () => client.connectionState === "connected");
          } else {
            await client.disconnect();
          }
          count("stream", `${step} stream ${client.stream === null ? "closed" : "opened"}`);
        } else if (roll < 70) {
          const collection = random.pick(held);
          await collection.loadPrevious();
          count("page", `${step} page ${collection.channelURL}/${collection.category ?? "-"}`);
        } else if (roll < 74) {
          // The page is reloaded: a new client, loaded afresh.
          await client.close();
          client = makeClient();
          held = await open(client);
          count("reload", `${step} page reloaded`);
        } else if (roll < 78) {
          // Offline and back: a stream waiting to reconnect goes at once, and everything is synced.
          client.wakeReconnect?.();
          await client.refreshAll();
          count("online", `${step} back online`);
        } else if (roll < 84) {
          // The user's own states, here or on the other device, of what a collection shows.
          const changer = random.coin() ? tablet : client;
          const [channel, category, status] = random.pick(kept);
          const collection = changer.collection(channel, { category, status });
          await collection.refresh();
          const ids = collection.notifications.map((notification) => notification.id).slice(0, 1 + random.below(2));
          const roll = ids.length === 0 ? 11 : random.below(14);
          const what =
            roll < 4 ? "archive" : roll < 6 ? "unarchive" : roll < 9 ? "unread" : roll < 11 ? "delete" : roll < 12 ? (random.coin() ? "archiveRead" : "archiveAll") : "press";
          if (what === "press") {
            // Deleted since the collection synced: a 404, and nothing changes.
            await collection.press(random.coin() ? "ack" : "open", ids[0]).catch((error) => {
              if (error.status !== 404) throw error;
            });
          } else if (what === "archive") await collection.archive(ids);
          else if (what === "unarchive") await collection.unarchive(ids);
          else if (what === "unread") await collection.markUnread(ids);
          else if (what === "delete") await collection.delete(ids);
          else if (what === "archiveRead") await collection.archiveRead();
          else await collection.archiveAll();
          count("state", `${step} ${what} ${ids} ${changer === tablet ? "tablet" : "client"} ${channel}/${category ?? "-"}/${status}`);
        }
        if (step % 25 === 24) await expectQuiet(client, held, session, step, history);
      }
      await expectQuiet(client, held, session, 1_000, history);
      for (const kind of ["send", "edit", "delete", "read", "reset", "stream", "page", "reload", "online", "state"]) {
        assert.ok((counts[kind] ?? 0) > 3, `${kind}: ${JSON.stringify(counts)}`);
      }
    } finally {
      // A client left open would keep reconnecting, and Node waiting for it to end.
      await client.close();
      await tablet.close();
    }
  });
}

/**
 * A quiet point: the client refreshes, and what it holds must come to equal a fresh client's full
 * loads — at once, or once the stream's last events and the server's background transactions (which
 * hold back what a sync may return) have passed; a difference that lasts 20 s is a failure.
 * @param {HeraldClient} client
 * @param {import("../collection.js").NotificationCollection[]} held
 * @param {string} session
 * @param {number} step
 * @param {string[]} history
 */
async function expectQuiet(client, held, session, step, history) {
  const deadline = Date.now() + 20_000;
  let problems = [];
  for (;;) {
    await client.refreshAll();
    problems = await differences(client, held, session, step);
    if (problems.length === 0 || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.deepEqual(problems, [], history.slice(-40).join("\n"));
}

/**
 * How the client's collections and unread counts differ from a fresh client's.
 * @param {HeraldClient} client
 * @param {import("../collection.js").NotificationCollection[]} held
 * @param {string} session
 * @param {number} step
 */
async function differences(client, held, session, step) {
  /** @type {string[]} */
  const problems = [];
  const fresh = new HeraldClient({ baseURL: server.url, sessionToken: session });
  for (const collection of held) {
    const truth = fresh.collection(collection.channelURL, { category: collection.category, status: collection.status });
    truth.pageSize = 100;
    await truth.refresh();
    while (truth.hasPrevious) await truth.loadPrevious();
    const mine = collection.notifications;
    const label = `step ${step}, ${collection.channelURL}/${collection.category ?? "*"}/${collection.status}`;
    const ids = mine.map((notification) => notification.id);
    if (new Set(ids).size !== ids.length) problems.push(`${label}: duplicates ${ids}`);
    const expected = truth.notifications.slice(0, mine.length);
    if (JSON.stringify(mine) !== JSON.stringify(expected)) {
      const first = mine.findIndex((notification, index) => JSON.stringify(notification) !== JSON.stringify(expected[index]));
      problems.push(
        `${label}: held ${ids}, truth ${truth.notifications.map((notification) => notification.id)}; ` +
          `first difference: held ${JSON.stringify(mine[first])}, truth ${JSON.stringify(expected[first])}`,
      );
    }
    if (!collection.hasPrevious && mine.length !== truth.notifications.length) problems.push(`${label}: missing the oldest`);
    // A first page is never empty while there is anything to show (older pages or not).
    if (mine.length === 0 && truth.notifications.length > 0) problems.push(`${label}: holds nothing of ${truth.notifications.length}`);
    if (JSON.stringify(collection.state) !== JSON.stringify(truth.state)) {
      problems.push(`${label}: state ${JSON.stringify(collection.state)} for ${JSON.stringify(truth.state)}`);
    }
    if (!collection.isLive) problems.push(`${label}: not live`);
  }
  await fresh.refreshUnread();
  await client.refreshUnread();
  if (JSON.stringify(sorted(client.unread)) !== JSON.stringify(sorted(fresh.unread))) {
    problems.push(`step ${step}: unread ${JSON.stringify(client.unread)} for ${JSON.stringify(fresh.unread)}`);
  }
  await fresh.close();
  return problems;
}

/** @param {{total: number, channels: Record<string, number>}} unread */
function sorted(unread) {
  return { total: unread.total, channels: Object.fromEntries(Object.entries(unread.channels).sort(([a], [b]) => (a < b ? -1 : 1))) };
}
