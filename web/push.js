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
 * Herald's VAPID key, registers it as the user's device, and leaves the worker what it needs.
 * Resolves to the device id. A registration holds one subscription: one made with the key Herald had
 * before (an admin replaced it) is made anew; one made with a key Herald never had (the app's own
 * pushes) is replaced only with `replace`, else this throws.
 * @param {import("./client.js").HeraldClient} client
 * @param {ServiceWorkerRegistration} registration
 * @param {{replace?: boolean}} options
 * @returns {Promise<string>}
 */
export async function subscribe(client, registration, { replace = false }) {
  const { public_key: publicKey } = /** @type {{public_key: string}} */ (await client.api.webPushKey());
  const key = fromBase64URL(publicKey);
  let subscription = await registration.pushManager.getSubscription();
  const held = subscription?.options.applicationServerKey;
  if (subscription && !(held && sameBytes(new Uint8Array(held), key))) {
    const before = (await sharedCredentials())?.key;
    if (!replace && !(held && before && sameBytes(new Uint8Array(held), fromBase64URL(before)))) {
      throw new HeraldError("The service worker already has a push subscription with another key than Herald's: pass {replace: true} to replace it.", {
        status: 0,
        code: "push_subscription_taken",
      });
    }
    await subscription.unsubscribe();
    subscription = null;
  }
  subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  const device = /** @type {{id: string}} */ (await client.api.registerDevice({ service: "webpush", subscription: subscription.toJSON() }));
  await shareWithWorker(client, device.id, publicKey);
  return device.id;
}

/**
 * Removes the device from the user's devices, ends the browser's subscription if it is Herald's, and
 * forgets what the worker was left.
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
  const subscription = await registration.pushManager.getSubscription();
  const held = subscription?.options.applicationServerKey;
  const ours = (await sharedCredentials())?.key;
  if (subscription && held && ours && sameBytes(new Uint8Array(held), fromBase64URL(ours))) await subscription.unsubscribe();
  await (await caches.open("herald")).delete(credentialsURL());
}

/**
 * What the page last left the worker, or null.
 * @returns {Promise<{baseURL: string, sessionToken: string, device: string, key?: string} | null>}
 */
async function sharedCredentials() {
  const stored = await (await caches.open("herald")).match(credentialsURL());
  return stored ? stored.json() : null;
}

/**
 * Leaves the service worker the server's URL, the session token and `device`, for the receipts and
 * syncs it makes when a push comes (again whenever the token is renewed), and the VAPID key the
 * browser subscribed with (`key`, kept from before when not given).
 * @param {import("./client.js").HeraldClient} client
 * @param {string} device
 * @param {string} [key]
 */
export async function shareWithWorker(client, device, key) {
  const kept = key ?? (await sharedCredentials())?.key;
  const credentials = { baseURL: client.api.baseURL, sessionToken: await client.api.currentToken(), device, ...(kept ? { key: kept } : {}) };
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
