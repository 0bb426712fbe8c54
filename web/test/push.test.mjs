// Web Push in the web client against a real `herald serve`: the page's subscription (the browser's
// push manager and Cache Storage are stood in for: Node has neither), and herald-worker.js run in a
// context with a service worker's globals (notifications and pages recorded) that calls the real
// server. The real browser plumbing is walked in headless Chromium (Tests/Browser/web_feed_walk.py).

import assert from "node:assert/strict";
import { createECDH, generateKeyPairSync, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import vm from "node:vm";
import { HeraldClient } from "../herald.js";
import { HeraldServer, waitUntil } from "../test-support/herald-server.mjs";

const origin = "https://app.example";
const workerSource = readFileSync(new URL("../herald-worker.js", import.meta.url), "utf8");

/** @type {HeraldServer} */
let server;
before(async () => {
  server = await HeraldServer.start();
  // What a page's global scope has that the push helpers use.
  Object.assign(globalThis, { caches: new FakeCaches(), location: { origin } });
});
after(async () => {
  await server?.close();
});

/** Cache Storage, as far as the page and its worker share it. */
class FakeCaches {
  constructor() {
    /** @type {Map<string, string>} */
    this.entries = new Map();
  }
  /** @param {string} name */
  async open(name) {
    const entries = this.entries;
    const key = (/** @type {string} */ url) => `${name} ${url}`;
    return {
      put: async (/** @type {string} */ url, /** @type {Response} */ response) => void entries.set(key(url), await response.text()),
      match: async (/** @type {string} */ url) => (entries.has(key(url)) ? new Response(entries.get(key(url))) : undefined),
      delete: async (/** @type {string} */ url) => entries.delete(key(url)),
    };
  }
}

/** A browser's push manager: subscriptions with real P-256 keys, at an FCM endpoint. */
class FakePushManager {
  constructor() {
    /** @type {any} */
    this.subscription = null;
    this.subscribed = 0;
  }
  async getSubscription() {
    return this.subscription;
  }
  /** @param {{userVisibleOnly: boolean, applicationServerKey: Uint8Array}} options */
  async subscribe({ userVisibleOnly, applicationServerKey }) {
    assert.equal(userVisibleOnly, true, "browsers refuse subscriptions that may push silently");
    this.subscribed += 1;
    const ecdh = createECDH("prime256v1");
    ecdh.generateKeys();
    const endpoint = `https://fcm.googleapis.com/fcm/send/web-push-test-${randomBytes(6).toString("hex")}`;
    const keys = { p256dh: ecdh.getPublicKey().toString("base64url"), auth: randomBytes(16).toString("base64url") };
    const manager = this;
    this.subscription = {
      endpoint,
      options: { applicationServerKey: new Uint8Array(applicationServerKey).buffer },
      toJSON: () => ({ endpoint, expirationTime: null, keys }),
      unsubscribe: async () => {
        if (manager.subscription?.endpoint === endpoint) manager.subscription = null;
        return true;
      },
    };
    return this.subscription;
  }
}

/**
 * herald-worker.js in a context of its own with a service worker's globals: `fetch` is the real one
 * (recorded), notifications shown and pages opened are recorded.
 * @param {{focused?: boolean}} [page]
 */
function worker({ focused = false } = {}) {
  /** @type {{title: string, options: any, closed: boolean}[]} */
  const shown = [];
  /** @type {{method: string, url: string, device: string | null, status: number}[]} */
  const requests = [];
  /** @type {any[]} */
  const messages = [];
  /** @type {string[]} */
  const opened = [];
  const page = { url: `${origin}/inbox`, focused, postMessage: (/** @type {any} */ message) => messages.push(message), focus: async () => page };
  const scope = {
    location: { origin },
    caches: globalThis.caches,
    URL,
    Response,
    console,
    fetch: async (/** @type {string} */ url, /** @type {RequestInit} */ init) => {
      const response = await fetch(url, init);
      const headers = /** @type {Record<string, string>} */ (init.headers ?? {});
      requests.push({ method: init.method ?? "GET", url, device: headers["Herald-Device"] ?? null, status: response.status });
      return response;
    },
    registration: {
      scope: `${origin}/`,
      showNotification: async (/** @type {string} */ title, /** @type {any} */ options) => void shown.push({ title, options, closed: false }),
      getNotifications: async (/** @type {{tag?: string}} */ { tag } = {}) =>
        shown.filter((entry) => !entry.closed && (tag === undefined || entry.options.tag === tag)).map((entry) => ({ close: () => (entry.closed = true) })),
    },
    clients: {
      matchAll: async () => [page],
      openWindow: async (/** @type {string} */ url) => void opened.push(url),
    },
    addEventListener: () => {},
  };
  const context = vm.createContext(scope);
  vm.runInContext(workerSource, context);
  return { HeraldWorker: /** @type {any} */ (context).HeraldWorker, shown, requests, messages, opened };
}

/**
 * A value made in the worker's context, as plain data of this one (objects of another context have
 * other prototypes, which deep equality tells apart).
 * @param {unknown} value
 */
function plain(value) {
  return JSON.parse(JSON.stringify(value));
}

/** A push event carrying `payload` as JSON. @param {unknown} payload */
function push(payload) {
  return { data: { json: () => JSON.parse(JSON.stringify(payload)) } };
}

let users = 0;
async function world() {
  users += 1;
  const channel = `web-push-${users}`;
  const user = `${channel}-user`;
  await server.channel(channel);
  const session = await server.session(user);
  const client = new HeraldClient({ baseURL: server.url, sessionToken: session });
  const registration = /** @type {any} */ ({ pushManager: new FakePushManager() });
  return { channel, user, session, client, registration };
}

/** @param {HeraldClient} client */
async function devices(client) {
  return /** @type {{devices: any[]}} */ (await client.api.request("GET", "/v1/me/devices")).devices;
}

describe("Web Push", () => {
  test("subscribes with Herald's key and registers the device; a replaced key subscribes anew", async () => {
    const { session, client, registration } = await world();
    const { public_key: key } = /** @type {any} */ (await client.api.webPushKey());
    const device = await client.enablePush(registration);
    assert.equal(client.device, device);
    const subscription = registration.pushManager.subscription;
    assert.equal(Buffer.from(subscription.options.applicationServerKey).toString("base64url"), key);
    assert.deepEqual(
      (await devices(client)).map((entry) => [entry.id, entry.service, entry.device_token]),
      [[device, "webpush", subscription.endpoint]],
    );
    const cache = await globalThis.caches.open("herald");
    const stored = await (await cache.match(`${origin}/.herald/push-credentials`))?.json();
    assert.deepEqual(stored, { baseURL: server.url, sessionToken: session, device, key });

    // Enabled again with the same key: the same subscription, the same device.
    assert.equal(await client.enablePush(registration), device);
    assert.equal(registration.pushManager.subscribed, 1);

    // An admin replaces the key: Herald drops the browser subscriptions, and the page's next
    // enablePush makes a new subscription with the new key.
    const privateKey = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ type: "pkcs8", format: "pem" });
    const { public_key: replaced } = await server.admin("PUT", "/v1/webpush/key", { private_key: privateKey });
    assert.deepEqual(await devices(client), []);
    const again = await client.enablePush(registration);
    assert.equal(registration.pushManager.subscribed, 2);
    assert.equal(Buffer.from(registration.pushManager.subscription.options.applicationServerKey).toString("base64url"), replaced);
    assert.deepEqual(
      (await devices(client)).map((entry) => entry.id),
      [again],
    );

    await client.disablePush(registration);
    assert.deepEqual(await devices(client), []);
    assert.equal(registration.pushManager.subscription, null);
    assert.equal(client.device, null);
    assert.equal(await cache.match(`${origin}/.herald/push-credentials`), undefined);
    await client.close();
  });

  test("a subscription the app made with a key of its own is replaced only when asked", async () => {
    const { client, registration } = await world();
    const own = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).publicKey.export({ type: "spki", format: "der" }).subarray(-65);
    await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: new Uint8Array(own) });
    const theApps = registration.pushManager.subscription.endpoint;
    await assert.rejects(client.enablePush(registration), (error) => error.code === "push_subscription_taken");
    assert.equal(registration.pushManager.subscription.endpoint, theApps);
    assert.deepEqual(await devices(client), []);
    const device = await client.enablePush(registration, { replace: true });
    assert.notEqual(registration.pushManager.subscription.endpoint, theApps);
    assert.deepEqual(
      (await devices(client)).map((entry) => entry.id),
      [device],
    );
    // Herald's own subscription ends with disablePush; the app's would have been left alone.
    await client.disablePush(registration);
    assert.equal(registration.pushManager.subscription, null);
    await client.close();
  });

  test("the worker shows an alert, posts its receipt, and counts a click on it", async () => {
    const { channel, user, client, registration } = await world();
    const device = await client.enablePush(registration);
    const id = await server.send(channel, [user], "an alert");
    const { HeraldWorker, shown, requests, opened } = worker();
    const herald = { type: "note", message_id: Number(id), channel: { channel_url: channel } };
    assert.equal(await HeraldWorker.handlePush(push({ notification: { title: "Order shipped", body: "It is on its way" }, herald, url: `${origin}/orders/7` })), true);
    assert.deepEqual(
      shown.map(({ title, options }) => [title, options.body, options.data.custom.url]),
      [["Order shipped", "It is on its way", `${origin}/orders/7`]],
    );
    assert.deepEqual(
      requests.map(({ method, url, device: named, status }) => [method, url, named, status]),
      [["POST", `${server.url}/v1/me/delivered`, device, 200]],
    );
    const collection = client.collection(channel);
    await waitUntil("the copy to be delivered", async () => {
      await collection.refresh();
      return collection.notifications.find((notification) => notification.id === id)?.status === "DELIVERED";
    });

    let closed = false;
    const clicked = { notification: { data: shown[0].options.data, close: () => (closed = true) } };
    assert.equal(await HeraldWorker.handleNotificationClick(clicked), true);
    assert.ok(closed);
    assert.deepEqual(opened, [`${origin}/orders/7`]);
    assert.deepEqual(requests.at(-1), { method: "POST", url: `${server.url}/v1/me/events`, device, status: 204 });
    const counts = await server.admin("GET", `/v1/notifications/${id}`);
    assert.equal(counts.counts.clicked, 1, JSON.stringify(counts));
    await client.close();
  });

  test("the worker answers a refresh: the pages told, the device synced, the count shown unless a page has the focus", async () => {
    const { client, registration } = await world();
    const device = await client.enablePush(registration);
    const away = worker();
    assert.equal(await away.HeraldWorker.handlePush(push({ herald: { type: "refresh", badge: 2, channels: [] } })), true);
    assert.deepEqual(plain(away.messages), [{ type: "herald.refresh", herald: { type: "refresh", badge: 2, channels: [] } }]);
    assert.deepEqual(
      away.requests.map(({ method, url, device: named, status }) => [method, url, named, status]),
      [["GET", `${server.url}/v1/me/channels`, device, 200]],
    );
    assert.ok((await devices(client)).find((entry) => entry.id === device)?.last_synced_at, "the channel list named the device");
    assert.deepEqual(
      away.shown.map(({ title, options }) => [title, options.tag]),
      [["2 unread", "herald-refresh"]],
    );
    // Nothing unread any more: said quietly (a browser requires every push to show something).
    await away.HeraldWorker.handlePush(push({ herald: { type: "refresh", badge: 0, channels: [] } }));
    assert.deepEqual(
      away.shown.map(({ title, options }) => [title, options.tag, options.silent]),
      [
        ["2 unread", "herald-refresh", false],
        ["Nothing unread", "herald-refresh", true],
      ],
    );

    const focused = worker({ focused: true });
    await focused.HeraldWorker.handlePush(push({ herald: { type: "refresh", badge: 5, channels: [] } }));
    assert.equal(focused.messages.length, 1);
    assert.deepEqual(focused.shown, [], "a focused page shows the change itself");

    // Not Herald's: left to the app's own listeners.
    const other = worker();
    assert.equal(await other.HeraldWorker.handlePush(push({ title: "not ours" })), false);
    assert.equal(await other.HeraldWorker.handlePush({ data: { json: () => JSON.parse("not json") } }), false);
    assert.deepEqual([other.shown, other.requests], [[], []]);
    await client.close();
  });
});
