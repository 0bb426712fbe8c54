// A user's topics through the web client against a real `herald serve`: following, muting,
// unfollowing, and a send to a topic arriving in the feed only while the topic is not muted.

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
