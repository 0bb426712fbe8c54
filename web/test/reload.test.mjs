// The reloads the server asks for through `is_live: false` beyond a reset and a forged token (those
// are in collection.test.mjs): a token too many changes behind, on a server whose huge-gap threshold
// is small, and a token from before the change history was compacted.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { HeraldClient } from "../herald.js";
import { HeraldServer, settled } from "../test-support/herald-server.mjs";

/** @type {HeraldServer} */
let server;
before(async () => {
  server = await HeraldServer.start({ environment: { HERALD_SYNC_HUGE_GAP: "5" } });
});
after(async () => {
  await server?.close();
});

test("a token more changes behind than the huge gap loads afresh, and says so", async () => {
  const channel = "web-reload-gap";
  const user = `${channel}-user`;
  await server.channel(channel);
  const session = await server.session(user);
  const client = new HeraldClient({ baseURL: server.url, sessionToken: session });
  try {
    const collection = client.collection(channel);
    await server.send(channel, [user], "first");
    await collection.refresh();
    let reloads = 0;
    collection.addEventListener("reload", () => (reloads += 1));
    // A few changes: followed by a sync.
    for (let index = 0; index < 3; index++) await server.send(channel, [user], `near ${index}`);
    await settled(server.url, session, channel);
    await collection.refresh();
    assert.equal(reloads, 0);
    assert.equal(collection.notifications.length, 4);
    // More than five: the token cannot go on.
    const ids = [];
    for (let index = 0; index < 8; index++) ids.push(await server.send(channel, [user], `far ${index}`));
    await settled(server.url, session, channel);
    assert.equal(await collection.refresh(), true);
    assert.equal(reloads, 1);
    assert.equal(collection.reloadCount, 1);
    assert.equal(collection.isLive, true);
    assert.deepEqual(
      collection.notifications.slice(0, 8).map((notification) => notification.id),
      [...ids].reverse(),
    );
    assert.equal(collection.notifications.length, 12);
    assert.equal(collection.state.unread_count, 12);
  } finally {
    await client.close();
  }
});

test(
  "a token from before the change history was compacted loads afresh",
  { skip: process.env.DATABASE_URL ? false : "herald compact needs DATABASE_URL (swift test gives one)" },
  async () => {
    const channel = "web-reload-compacted";
    const user = `${channel}-user`;
    await server.channel(channel);
    const session = await server.session(user);
    const client = new HeraldClient({ baseURL: server.url, sessionToken: session });
    try {
      const kept = await server.send(channel, [user], "kept");
      const deleted = await server.send(channel, [user], "deleted");
      const collection = client.collection(channel);
      await collection.refresh();
      assert.equal(collection.notifications.length, 2);
      await server.admin("DELETE", `/v1/notifications/${deleted}`);
      await settled(server.url, session, channel);
      // The first pass records the horizon (past the deletion), the second compacts through it.
      await server.compact("0s");
      assert.match(await server.compact("0s"), /Compacted through position \d+: [1-9]\d* tombstone/);
      assert.equal(await collection.refresh(), true);
      assert.equal(collection.reloadCount, 1);
      assert.equal(collection.isLive, true);
      assert.deepEqual(
        collection.notifications.map((notification) => notification.id),
        [kept],
      );
    } finally {
      await client.close();
    }
  },
);
