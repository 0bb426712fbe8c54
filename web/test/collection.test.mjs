// The web client's collections against a real `herald serve`: loading and paging, convergence with
// what happens elsewhere, and the reloads the server asks for.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { HeraldAPI, HeraldClient, HeraldError } from "../herald.js";
import { HeraldServer, waitUntil } from "../test-support/herald-server.mjs";

/** @type {HeraldServer} */
let server;
before(async () => {
  server = await HeraldServer.start();
});
after(async () => {
  await server?.close();
});

let channels = 0;
/** A fresh channel and user for one test, and a client signed in as the user. */
async function world() {
  channels += 1;
  const channel = `web-collection-${channels}`;
  const user = `${channel}-user`;
  await server.channel(channel);
  const session = await server.session(user);
  const client = new HeraldClient({ baseURL: server.url, sessionToken: session });
  return { channel, user, session, client };
}

/**
 * What a fresh load of the whole collection holds: every notification's id, status and data, newest
 * first (paging until the end).
 * @param {string} session
 * @param {string} channel
 */
async function freshView(session, channel) {
  const fresh = new HeraldClient({ baseURL: server.url, sessionToken: session });
  const collection = fresh.collection(channel);
  collection.pageSize = 100;
  await collection.refresh();
  while (collection.hasPrevious) await collection.loadPrevious();
  const [view, state] = [summary(collection.notifications), collection.state];
  await fresh.close();
  return { view, state };
}

/** @param {any[]} notifications */
function summary(notifications) {
  return notifications.map((notification) => ({ id: notification.id, status: notification.status, data: notification.data }));
}

describe("a collection", () => {
  test("loads the newest page, then older pages, newest first and each once", async () => {
    const { channel, user, session } = await world();
    /** @type {string[]} */
    const requests = [];
    const client = new HeraldClient({
      baseURL: server.url,
      sessionToken: session,
      fetch: (url, init) => {
        requests.push(String(url));
        return fetch(url, init);
      },
    });
    const sent = [];
    for (let index = 0; index < 75; index++) sent.push(await server.send(channel, [user], `n${index}`));
    const collection = client.collection(channel);
    let reloads = 0;
    collection.addEventListener("reload", () => (reloads += 1));
    assert.equal(await collection.refresh(), true);
    assert.equal(reloads, 1);
    assert.equal(collection.notifications.length, 30);
    assert.deepEqual(
      collection.notifications.map((notification) => notification.id),
      sent.slice(45).reverse(),
    );
    assert.equal(collection.hasPrevious, true);
    assert.equal(collection.state.unread_count, 75);
    assert.equal(client.unread.total, 75);
    // Two calls at once share one page: one request.
    const before = requests.length;
    await Promise.all([collection.loadPrevious(), collection.loadPrevious()]);
    assert.equal(collection.notifications.length, 60);
    assert.equal(requests.length - before, 1);
    await collection.loadPrevious();
    assert.deepEqual(
      collection.notifications.map((notification) => notification.id),
      [...sent].reverse(),
    );
    assert.equal(collection.hasPrevious, false);
    assert.equal(collection.notifications[0].data.title, "n74");
    assert.equal(await collection.refresh(), false, "a quiet sync changes nothing");
    await client.close();
  });

  test("converges with sends, edits, deletions and reads made elsewhere", async () => {
    const { channel, user, session, client } = await world();
    const ids = [];
    for (let index = 0; index < 5; index++) ids.push(await server.send(channel, [user], `first ${index}`));
    const collection = client.collection(channel);
    await collection.refresh();
    /** @type {{inserted: string[], updated: string[], removed: string[]}[]} */
    const changes = [];
    collection.addEventListener("change", (event) => changes.push(/** @type {CustomEvent} */ (event).detail));

    const added = await server.send(channel, [user], "later");
    await server.admin("PATCH", `/v1/notifications/${ids[1]}`, { variables: { title: "edited" } });
    await server.admin("DELETE", `/v1/notifications/${ids[2]}`);
    // Another device of the same user reads one.
    await new HeraldAPI({ baseURL: server.url, sessionToken: session }).markRead(channel, [ids[3]]);

    // A sync returns a change once no transaction still open anywhere in the cluster could precede
    // it: with other work on the cluster, that may take more than one refresh.
    /** @type {{view: any[], state: any}} */
    let fresh = { view: [], state: null };
    await waitUntil("the collection to converge", async () => {
      await collection.refresh();
      fresh = await freshView(session, channel);
      return JSON.stringify(summary(collection.notifications)) === JSON.stringify(fresh.view) && JSON.stringify(collection.state) === JSON.stringify(fresh.state);
    });
    const detail = changes.reduce(
      (all, change) => ({
        inserted: [...all.inserted, ...change.inserted],
        updated: [...all.updated, ...change.updated],
        removed: [...all.removed, ...change.removed],
      }),
      { inserted: [], updated: [], removed: [] },
    );
    assert.deepEqual(detail.inserted, [added]);
    assert.deepEqual(detail.removed, [ids[2]]);
    assert.deepEqual([...new Set(detail.updated)].sort(), [ids[1], ids[3]].sort());
    assert.deepEqual(summary(collection.notifications), fresh.view);
    assert.equal(collection.notifications.find((notification) => notification.id === ids[1])?.data.title, "edited");
    assert.equal(collection.notifications.find((notification) => notification.id === ids[3])?.status, "READ");
    assert.equal(collection.state.unread_count, 4);
    assert.deepEqual(collection.state, fresh.state);

    // Marking all read here: the count, the statuses and the client's badge follow.
    assert.equal(await collection.markRead(), 0);
    assert.equal(client.unread.total, 0);
    await waitUntil("the copies' statuses to follow", async () => {
      await collection.refresh();
      return collection.notifications.every((notification) => notification.status === "READ");
    });
    await client.close();
  });

  test(
    "a read mark reads the held copies at once, and the server's own versions still replace them",
    { skip: process.env.DATABASE_URL ? false : "holding a transaction needs DATABASE_URL (swift test gives one)" },
    async () => {
      const { channel, user, session, client } = await world();
      const first = await server.send(channel, [user], "first");
      await server.send(channel, [user], "second");
      const collection = client.collection(channel);
      await collection.refresh();
      const held = await server.holdTransaction();
      try {
        // Another device reads one while every sync is held back: this client cannot know yet, and
        // its own mark then leaves that copy as the other device's read left it.
        await new HeraldAPI({ baseURL: server.url, sessionToken: session }).markRead(channel, [first]);
        assert.equal(await collection.markRead(), 0);
        assert.deepEqual(
          collection.notifications.map((notification) => notification.status),
          ["READ", "READ"],
        );
      } finally {
        await held.end();
      }
      // Once the syncs pass both reads, the collection holds what a fresh load shows, positions too.
      await waitUntil("the collection to equal a fresh load", async () => {
        await collection.refresh();
        const fresh = new HeraldClient({ baseURL: server.url, sessionToken: session });
        const truth = fresh.collection(channel);
        await truth.refresh();
        const same = JSON.stringify(collection.notifications) === JSON.stringify(truth.notifications);
        await fresh.close();
        return same;
      });
      await client.close();
    },
  );

  test("a collection kept in a cache shows its last state at once, and syncs on from its token", async () => {
    const { channel, user, session } = await world();
    for (let index = 0; index < 3; index++) await server.send(channel, [user], `kept ${index}`);
    /** @type {Map<string, any>} */
    const stored = new Map();
    /** @type {import("../cache.js").HeraldCache} */
    const cache = {
      load: async (key) => structuredClone(stored.get(key) ?? null),
      save: async (key, snapshot) => void stored.set(key, structuredClone(snapshot)),
      clear: async () => stored.clear(),
    };
    const first = new HeraldClient({ baseURL: server.url, sessionToken: session, cache });
    const collection = first.collection(channel);
    await collection.refresh();
    await waitUntil("the cache to be written", () => stored.get(channel)?.notifications.length === 3);
    const kept = JSON.stringify(collection.notifications);
    await first.close();
    const later = await server.send(channel, [user], "while the page was closed");

    // The page loads again: the collection shows what the cache kept before any answer…
    /** @type {string[]} */
    const requests = [];
    /** @type {typeof fetch} */
    const recorded = (url, init) => {
      requests.push(String(url));
      return fetch(url, init);
    };
    const second = new HeraldClient({ baseURL: server.url, sessionToken: session, cache, fetch: recorded });
    const again = second.collection(channel);
    await waitUntil("the kept state", () => again.notifications.length === 3);
    assert.equal(JSON.stringify(again.notifications), kept);
    assert.deepEqual(requests, []);
    // …and its refreshes continue from the kept token: the later send arrives without a fresh load.
    await waitUntil("the later send", async () => {
      await again.refresh();
      return again.notifications[0]?.id === later;
    });
    assert.equal(again.reloadCount, 0);
    assert.ok(
      requests.every((url) => new URL(url).searchParams.has("token")),
      `every sync continued a token: ${requests}`,
    );
    await second.close();
  });

  test("loads afresh when the channel is reset or the token is not one", async () => {
    const { channel, user, client } = await world();
    await server.send(channel, [user], "before the reset");
    const collection = client.collection(channel);
    await collection.refresh();
    let reloads = 0;
    collection.addEventListener("reload", () => (reloads += 1));
    await server.admin("POST", `/v1/users/${encodeURIComponent(user)}/channels/${encodeURIComponent(channel)}/reset`);
    const after = await server.send(channel, [user], "after the reset");
    assert.equal(await collection.refresh(), true);
    assert.equal(reloads, 1);
    assert.equal(collection.reloadCount, 1);
    assert.deepEqual(
      collection.notifications.map((notification) => notification.id),
      [after],
    );
    assert.equal(collection.isLive, true);

    // A token the server did not make (a forged or damaged one) is not live: loaded afresh.
    collection.token = collection.token?.slice(0, -4) + "AAAA";
    assert.equal(await collection.refresh(), true);
    assert.equal(collection.reloadCount, 2);
    assert.deepEqual(
      collection.notifications.map((notification) => notification.id),
      [after],
    );
    await client.close();
  });

  test("errors are typed, with the server's status and code", async () => {
    const { client } = await world();
    await assert.rejects(client.collection("no-such-channel").refresh(), (error) => {
      assert.ok(error instanceof HeraldError);
      assert.equal(error.status, 404);
      assert.equal(error.code, "channel_not_found");
      return true;
    });
    const refused = new HeraldClient({ baseURL: server.url, sessionToken: "not-a-session" });
    let told = 0;
    refused.addEventListener("sessionrefused", () => (told += 1));
    await assert.rejects(refused.channels.refresh(), (error) => error instanceof HeraldError && error.status === 401 && error.code === "unauthorized");
    assert.equal(told, 1);
    const unreachable = new HeraldClient({ baseURL: "http://127.0.0.1:9" });
    unreachable.api.token = "x";
    await assert.rejects(unreachable.channels.refresh(), (error) => error instanceof HeraldError && error.status === 0 && error.code === "network");
    await client.close();
  });

  test("asks the app for a new session token once when the server refuses the one held", async () => {
    const { channel, user, session, client } = await world();
    await client.close();
    await server.send(channel, [user], "hello");
    let asked = 0;
    const renewing = new HeraldClient({
      baseURL: server.url,
      sessionToken: "expired-or-revoked",
      fetchSessionToken: async () => {
        asked += 1;
        return session;
      },
    });
    const collection = renewing.collection(channel);
    // Two requests refused at once share one renewal.
    await Promise.all([collection.refresh(), renewing.channels.refresh()]);
    assert.equal(asked, 1);
    assert.equal(collection.notifications.length, 1);
    assert.equal(renewing.channels.feed.map((entry) => entry.channel_url).includes(channel), true);
    await renewing.close();
  });
});
