/**
 * Subscribes this browser to Herald's pushes through the page's service worker `registration`, with
 * Herald's VAPID key (a subscription made with another key — Herald's was replaced — is made anew),
 * registers it as the user's device, and leaves the worker what it needs. Resolves to the device id.
 * @param {import("./client.js").HeraldClient} client
 * @param {ServiceWorkerRegistration} registration
 * @returns {Promise<string>}
 */
export function subscribe(client: import("./client.js").HeraldClient, registration: ServiceWorkerRegistration): Promise<string>;
/**
 * Removes the device from the user's devices, ends the browser's subscription and forgets what the
 * worker was left.
 * @param {import("./client.js").HeraldClient} client
 * @param {ServiceWorkerRegistration} registration
 */
export function unsubscribe(client: import("./client.js").HeraldClient, registration: ServiceWorkerRegistration): Promise<void>;
/**
 * Leaves the service worker the server's URL, the session token and `device`, for the receipts and
 * syncs it makes when a push comes (again whenever the token is renewed).
 * @param {import("./client.js").HeraldClient} client
 * @param {string} device
 */
export function shareWithWorker(client: import("./client.js").HeraldClient, device: string): Promise<void>;
