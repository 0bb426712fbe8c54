// Herald's part of a page's service worker: shows the alert pushes Herald sends to browsers, answers
// its refresh pushes, and tells Herald what was received and clicked.
//
// A service worker must come from the page's own origin, so the app serves a small one of its own
// that loads this file from Herald and listens:
//
//     importScripts("https://herald.example.com/client/herald-worker.js");  // or `import` it in a module worker
//     HeraldWorker.listen();
//
// It is a classic script (no `export`), so both kinds of worker can load it; it defines
// `self.HeraldWorker`. The page's `HeraldClient.enablePush()` subscribes and leaves this worker what
// it needs to call Herald (the server's URL, the session token and the device), in the Cache
// Storage the page and its worker share.

(() => {
  const worker = /** @type {ServiceWorkerGlobalScope} */ (/** @type {unknown} */ (globalThis));
  /** Where the page leaves the worker its credentials (see `push.js`, which writes the same key). */
  const credentialsPath = "/.herald/push-credentials";

  /**
   * The credentials the page left, or null.
   * @returns {Promise<{baseURL: string, sessionToken: string, device: string} | null>}
   */
  async function credentials() {
    try {
      const cache = await caches.open("herald");
      const stored = await cache.match(new URL(credentialsPath, worker.location.origin).href);
      return stored ? await stored.json() : null;
    } catch {
      return null;
    }
  }

  /**
   * A request to Herald as the signed-in user, naming the device; what failed is logged, not thrown
   * (the notification is shown whatever Herald answers).
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   */
  async function call(method, path, body) {
    const held = await credentials();
    if (!held) return null;
    try {
      const response = await fetch(held.baseURL + path, {
        method,
        headers: {
          Authorization: `Bearer ${held.sessionToken}`,
          "Herald-Device": held.device,
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!response.ok) console.warn(`Herald: ${method} ${path} answered ${response.status}`);
      // The session the page left has expired or was revoked: an open page shares its current one.
      if (response.status === 401) {
        for (const page of await worker.clients.matchAll({ type: "window", includeUncontrolled: true })) page.postMessage({ type: "herald.session-refused" });
      }
      return response;
    } catch (error) {
      console.warn(`Herald: ${method} ${path} failed`, error);
      return null;
    }
  }

  /**
   * Handles a `push` event if it is Herald's; resolves to whether it was. An alert is shown and its
   * receipt posted. A refresh is passed to the open pages (`{type: "herald.refresh", herald}`, which
   * `HeraldClient.enablePush()` listens for), answered (so that the next change is pushed too), and —
   * unless one of the pages has the focus — shown as one notification of the unread count that
   * replaces the last (quietly when nothing is unread: a browser requires every push to show one, and
   * withdraws a subscription whose pushes show none).
   * @param {PushEvent} event
   * @param {{refreshTitle?: (badge: number) => string}} [options]
   * @returns {Promise<boolean>}
   */
  async function handlePush(event, options = {}) {
    let payload;
    try {
      payload = event.data?.json();
    } catch {
      return false;
    }
    const herald = payload?.herald;
    if (!herald || typeof herald !== "object") return false;
    if (payload.notification && typeof payload.notification === "object") {
      const { title, body } = payload.notification;
      const { notification: _notification, herald: _herald, ...custom } = payload;
      await worker.registration.showNotification(typeof title === "string" ? title : "", {
        body: typeof body === "string" ? body : "",
        data: { herald, custom },
      });
      await call("POST", "/v1/me/delivered", { herald });
      return true;
    }
    if (herald.type !== "refresh") return false;
    const pages = await worker.clients.matchAll({ type: "window", includeUncontrolled: true });
    for (const page of pages) page.postMessage({ type: "herald.refresh", herald });
    // A device that was pushed gets no other push until it syncs: the channel list, named by the
    // device, is that sync.
    await call("GET", "/v1/me/channels");
    if (pages.some((page) => page.focused)) return true;
    const badge = Number(herald.badge) || 0;
    const title = options.refreshTitle ? options.refreshTitle(badge) : badge > 0 ? `${badge} unread` : "Nothing unread";
    await worker.registration.showNotification(title, { tag: "herald-refresh", silent: badge === 0, data: { herald, custom: {} } });
    return true;
  }

  /**
   * Handles a `notificationclick` on a notification this helper showed; resolves to whether it was
   * one. The click is counted (an alert's), and a page is focused or opened: `openURL` of the
   * push's content when given, else its custom key `url`, else the worker's scope.
   * @param {NotificationEvent} event
   * @param {{openURL?: (content: {herald: any, custom: Record<string, unknown>}) => string | null | undefined}} [options]
   * @returns {Promise<boolean>}
   */
  async function handleNotificationClick(event, options = {}) {
    const content = event.notification.data;
    if (!content || typeof content !== "object" || !content.herald) return false;
    event.notification.close();
    const id = content.herald.message_id ?? content.herald.notification_id;
    if (id !== undefined && content.herald.type !== "refresh") {
      await call("POST", "/v1/me/events", { type: "clicked", notification_ids: [String(id)] });
    }
    const chosen = options.openURL ? options.openURL(content) : null;
    const url = new URL(chosen ?? (typeof content.custom?.url === "string" ? content.custom.url : worker.registration.scope), worker.registration.scope).href;
    const pages = await worker.clients.matchAll({ type: "window", includeUncontrolled: true });
    const open = pages.find((page) => page.url === url);
    if (open) await open.focus();
    else await worker.clients.openWindow(url);
    return true;
  }

  /**
   * Listens for Herald's pushes and for clicks on what they showed. Pushes and clicks that are not
   * Herald's are left to the worker's other listeners.
   * @param {{refreshTitle?: (badge: number) => string, openURL?: (content: {herald: any, custom: Record<string, unknown>}) => string | null | undefined}} [options]
   */
  function listen(options = {}) {
    worker.addEventListener("push", (event) => event.waitUntil(handlePush(event, options)));
    worker.addEventListener("notificationclick", (event) => event.waitUntil(handleNotificationClick(event, options)));
  }

  Object.assign(worker, { HeraldWorker: { listen, handlePush, handleNotificationClick } });
})();
