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
export function subscribe(client: import("./client.js").HeraldClient, registration: ServiceWorkerRegistration, { replace }: {
    replace?: boolean;
}): Promise<string>;
/**
 * Removes the device from the user's devices, ends the browser's subscription if it is Herald's, and
 * forgets what the worker was left.
 * @param {import("./client.js").HeraldClient} client
 * @param {ServiceWorkerRegistration} registration
 */
export function unsubscribe(client: import("./client.js").HeraldClient, registration: ServiceWorkerRegistration): Promise<void>;
/**
 * Leaves the service worker the server's URL, the session token and `device`, for the receipts and
 * syncs it makes when a push comes (again whenever the token is renewed), and the VAPID key the
 * browser subscribed with (`key`, kept from before when not given).
 * @param {import("./client.js").HeraldClient} client
 * @param {string} device
 * @param {string} [key]
 */
export function shareWithWorker(client: import("./client.js").HeraldClient, device: string, key?: string | undefined): Promise<void>;
