// The web client's live stream against a real `herald serve`: events applied as they happen, and a
// stream that comes back by itself after the server was killed and started again, and the catch-up
// after `ready` that brings what a held-back sync could not.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
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

describe("the live stream", () => {
  test("applies sends, edits, deletions and reads as they happen", async () => {
    const channel = "web-stream-live";
    const user = `${channel}-user`;
    await server.channel(channel);
    const session = await server.session(user);
    const client = new HeraldClient({ baseURL: server.url, sessionToken: session, WebSocket: SeparateWebSocket });
    const collection = client.collection(channel);
    await collection.refresh();
    client.connect();
    await waitUntil("the stream to open", () => client.connectionState === "connected");

    const first = await server.send(channel, [user], "live one");
    await waitUntil("the send to arrive", () => collection.notifications.some((notification) => notification.id === first));
    assert.equal(collection.state.unread_count, 1);
    await waitUntil("the badge", () => client.unread.total === 1);

    await server.admin("PATCH", `/v1/notifications/${first}`, { variables: { title: "edited live" } });
    await waitUntil("the edit", () => collection.notifications[0]?.data.title === "edited live");

    const second = await server.send(channel, [user], "live two");
    await waitUntil("the second send", () => collection.notifications.length === 2);
    await server.admin("DELETE", `/v1/notifications/${second}`);
    await waitUntil("the deletion", () => collection.notifications.length === 1 && collection.notifications[0].id === first);
    assert.equal(collection.state.unread_count, 1);

    // Read on another device: the state and the copies' statuses follow.
    const other = new HeraldClient({ baseURL: server.url, sessionToken: session, WebSocket: SeparateWebSocket });
    await other.collection(channel).refresh();
    await other.collection(channel).markRead();
    await waitUntil("the read elsewhere", () => collection.state.unread_count === 0 && collection.notifications[0].status === "READ");
    await waitUntil("the badge after the read", () => client.unread.total === 0);
    await other.close();
    await client.close();
    assert.equal(client.connectionState, "disconnected");
  });

  test(
    "brings a send the sync on ready was held back from, once the horizon passes",
    { skip: process.env.DATABASE_URL ? false : "holding a transaction needs DATABASE_URL (swift test gives one)" },
    async () => {
      // Sent just before the stream is ready, it comes as no event; while a transaction elsewhere in
      // the cluster is open, every sync's answer stops below it. The client syncs again until its
      // answers pass the `ready` event's position, with nothing else to prompt it.
      const channel = "web-stream-held";
      const user = `${channel}-user`;
      await server.channel(channel);
      const session = await server.session(user);
      const client = new HeraldClient({ baseURL: server.url, sessionToken: session, WebSocket: SeparateWebSocket });
      const collection = client.collection(channel);
      await collection.refresh();
      let syncs = 0;
      const sync = client.api.sync.bind(client.api);
      client.api.sync = async (...request) => {
        const answer = await sync(...request);
        syncs += 1;
        return answer;
      };
      const held = await server.holdTransaction();
      try {
        const sent = await server.send(channel, [user], "held back");
        client.connect();
        await waitUntil("the stream to open", () => client.connectionState === "connected");
        await waitUntil("the sync the stream's opening makes", () => syncs > 0);
        assert.ok(!collection.notifications.some((notification) => notification.id === sent), "the open transaction did not hold the sync back");
        await held.end();
        await waitUntil("the held-back send", () => collection.notifications.some((notification) => notification.id === sent));
      } finally {
        await held.end();
        await client.close();
      }
    },
  );

  test("comes back after the server is killed and started again, and catches up", async () => {
    const channel = "web-stream-restart";
    const user = `${channel}-user`;
    await server.channel(channel);
    const session = await server.session(user);
    const client = new HeraldClient({ baseURL: server.url, sessionToken: session, WebSocket: SeparateWebSocket, reconnect: { initial: 100, maximum: 500 } });
    const collection = client.collection(channel);
    await collection.refresh();
    client.connect();
    await waitUntil("the stream to open", () => client.connectionState === "connected");

    await server.kill();
    await waitUntil("the stream to notice", () => client.connectionState === "waiting" || client.connectionState === "connecting");
    await server.restart();
    // Sent before the stream is back: the sync on reopening brings it.
    const missed = await server.send(channel, [user], "while away");
    await waitUntil("the stream to reopen", () => client.connectionState === "connected", 60_000);
    await waitUntil("the missed send", () => collection.notifications.some((notification) => notification.id === missed));
    const live = await server.send(channel, [user], "after");
    await waitUntil("a live send after the restart", () => collection.notifications.some((notification) => notification.id === live));
    assert.deepEqual(
      collection.notifications.map((notification) => notification.id),
      [live, missed],
    );
    await client.close();
  });
});
