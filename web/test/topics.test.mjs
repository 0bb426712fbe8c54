// A user's topics and category choices through the web client against a real `herald serve`:
// following, muting, unfollowing, a send to a topic arriving only while the topic is not muted, and
// a category turned off never reaching the feed.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { HeraldClient } from "../herald.js";
import { HeraldServer, waitUntil } from "../test-support/herald-server.mjs";

/** @type {HeraldServer} */
let server;
before(async () => {
  server = await HeraldServer.start();
});
after(async () => {
  await server?.close();
});

test("a user follows, mutes and unfollows topics, and a topic send follows suit", async () => {
  const channel = "web-topics";
  const user = `${channel}-user`;
  await server.channel(channel);
  const session = await server.session(user);
  await server.admin("PUT", "/v1/topics/web:open", { name: "Open", self_subscribe: true });
  await server.admin("PUT", "/v1/topics/web:team", { name: "Team" });
  await server.admin("POST", "/v1/topics/web:team/subscribers", { user_ids: [user] });
  const client = new HeraldClient({ baseURL: server.url, sessionToken: session });
  try {
    assert.deepEqual((await client.topics()).map((topic) => [topic.topic_id, topic.self_subscribe]), [["web:team", false]]);
    const followed = await client.follow("web:open");
    assert.equal(followed.topic_id, "web:open");
    assert.equal(followed.muted, false);
    assert.equal((await client.setMuted("web:team", true)).muted, true);
    assert.deepEqual(
      (await client.topics()).map((topic) => [topic.topic_id, topic.muted]),
      [
        ["web:open", false],
        ["web:team", true],
      ],
    );

    // A send to each; only the unmuted topic's reaches the feed.
    const ids = [];
    for (const topic of ["web:team", "web:open"]) {
      const sent = await server.admin("POST", "/v1/notifications", {
        channel_url: channel,
        template_key: "note",
        topic,
        variables: { title: `to ${topic}` },
      });
      ids.push(sent.id);
    }
    for (const id of ids) {
      await waitUntil(`the fan-out of ${id}`, async () => (await server.admin("GET", `/v1/notifications/${id}`)).fanout.state === "done");
    }
    const feed = client.collection(channel);
    await waitUntil("the open topic's send", async () => {
      await feed.refresh();
      return feed.notifications.length > 0;
    });
    assert.deepEqual(
      feed.notifications.map((notification) => notification.data.title),
      ["to web:open"],
    );

    // The app's own topic cannot be left, only muted.
    await assert.rejects(client.unfollow("web:team"), { code: "topic_not_self_subscribe", status: 403 });
    await client.unfollow("web:open");
    assert.deepEqual((await client.topics()).map((topic) => topic.topic_id), ["web:team"]);
  } finally {
    await client.close();
  }
});

test("a category turned off for the inbox never reaches the feed", async () => {
  const channel = "web-categories";
  const user = `${channel}-user`;
  await server.channel(channel);
  const session = await server.session(user);
  const client = new HeraldClient({ baseURL: server.url, sessionToken: session });
  try {
    const before = await client.categoryPreferences(channel);
    assert.deepEqual(
      before.map((category) => [category.id, category.inbox, category.inbox_chosen]),
      [
        ["news", true, false],
        ["promo", true, false],
      ],
    );
    const promo = await client.setCategoryPreference(channel, "promo", { inbox: false });
    assert.equal(promo.inbox, false);
    assert.equal(promo.inbox_chosen, true);
    await server.send(channel, [user], "an offer", { category: "promo" });
    await server.send(channel, [user], "the news", { category: "news" });
    const feed = client.collection(channel);
    await waitUntil("the news", async () => {
      await feed.refresh();
      return feed.notifications.length > 0;
    });
    assert.deepEqual(
      feed.notifications.map((notification) => notification.data.title),
      ["the news"],
    );
    // Back to the default: the next offer arrives.
    assert.equal((await client.setCategoryPreference(channel, "promo", { inbox: null })).inbox_chosen, false);
    await server.send(channel, [user], "another offer", { category: "promo" });
    await waitUntil("the offer", async () => {
      await feed.refresh();
      return feed.notifications.length > 1;
    });
    assert.equal(feed.notifications[0].data.title, "another offer");
  } finally {
    await client.close();
  }
});
