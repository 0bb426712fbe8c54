import { HeraldError } from "./errors.js";

/**
 * Where the page leaves its service worker what it calls Herald with, in the Cache Storage they
 * share (`herald-worker.js` reads the same key).
 */
const credentialsPath = "/.herald/push-credentials";

/** @returns {string} */
function credentialsURL() {
  return new URL(credentialsPath, globalThis.location.origin).href;
}

/**
 * Subscribes this browser to Herald's pushes through the page's service worker `registration`, with
 * Herald's VAPID key (a subscription made with another key — Herald's was replaced — is made anew),
 * registers it as the user's device, and leaves the worker what it needs. Resolves to the device id.
 * @param {import("./client.js").HeraldClient} client
 * @param {ServiceWorkerRegistration} registration
 * @returns {Promise<string>}
 */
export async function subscribe(client, registration) {
  const { public_key: publicKey } = /** @type {{public_key: string}} */ (await client.api.webPushKey());
  const key = fromBase64URL(publicKey);
  let subscription = await registration.pushManager.getSubscription();
  const held = subscription?.options.applicationServerKey;
  if (subscription && !(held && sameBytes(new Uint8Array(held), key))) {
    await subscription.unsubscribe();
    subscription = null;
  }
  subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  const device = /** @type {{id: string}} */ (await client.api.registerDevice({ service: "webpush", subscription: subscription.toJSON() }));
  await shareWithWorker(client, device.id);
  return device.id;
}

/**
 * Removes the device from the user's devices, ends the browser's subscription and forgets what the
 * worker was left.
 * @param {import("./client.js").HeraldClient} client
 * @param {ServiceWorkerRegistration} registration
 */
export async function unsubscribe(client, registration) {
  if (client.device) {
    try {
      await client.api.removeDevice(client.device);
    } catch (error) {
      // Gone already (another tab, an admin): what was asked for is true.
      if (!(error instanceof HeraldError && error.status === 404)) throw error;
    }
  }
  await (await registration.pushManager.getSubscription())?.unsubscribe();
  await (await caches.open("herald")).delete(credentialsURL());
}

/**
 * Leaves the service worker the server's URL, the session token and `device`, for the receipts and
 * syncs it makes when a push comes (again whenever the token is renewed).
 * @param {import("./client.js").HeraldClient} client
 * @param {string} device
 */
export async function shareWithWorker(client, device) {
  const credentials = { baseURL: client.api.baseURL, sessionToken: await client.api.currentToken(), device };
  const cache = await caches.open("herald");
  await cache.put(credentialsURL(), new Response(JSON.stringify(credentials), { headers: { "Content-Type": "application/json" } }));
}

/** @param {string} text */
function fromBase64URL(text) {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "="));
  return Uint8Array.from(binary, (character) => character.charCodeAt(0));
}

/**
 * @param {Uint8Array} a
 * @param {Uint8Array} b
 */
function sameBytes(a, b) {
  return a.length === b.length && a.every((byte, index) => byte === b[index]);
}
