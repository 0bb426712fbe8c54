import { HeraldError } from "./errors.js";

const template = document.createElement("template");
template.innerHTML = `
<style>
  :host {
    --herald-accent: #2563eb;
    --herald-background: #ffffff;
    --herald-foreground: #111827;
    --herald-muted: #6b7280;
    --herald-border: #e5e7eb;
    --herald-unread: #eff6ff;
    --herald-radius: 12px;
    --herald-width: 22rem;
    display: inline-block;
    position: relative;
    font: var(--herald-font, 14px/1.4 system-ui, sans-serif);
    color: var(--herald-foreground);
  }
  :host([theme="dark"]) {
    --herald-accent: #60a5fa;
    --herald-background: #111827;
    --herald-foreground: #f9fafb;
    --herald-muted: #9ca3af;
    --herald-border: #374151;
    --herald-unread: #1e293b;
  }
  @media (prefers-color-scheme: dark) {
    :host(:not([theme="light"])) {
      --herald-accent: #60a5fa;
      --herald-background: #111827;
      --herald-foreground: #f9fafb;
      --herald-muted: #9ca3af;
      --herald-border: #374151;
      --herald-unread: #1e293b;
    }
  }
  button { font: inherit; color: inherit; cursor: pointer; }
  :focus-visible { outline: 3px solid var(--herald-accent); outline-offset: 2px; }
  [part="bell"] {
    position: relative; display: grid; place-items: center; width: 2.5rem; height: 2.5rem;
    border: 1px solid var(--herald-border); border-radius: 50%; background: var(--herald-background);
  }
  [part="bell"] svg { width: 1.25rem; height: 1.25rem; }
  [part="badge"] {
    position: absolute; top: -0.25rem; right: -0.25rem; min-width: 1.25rem; padding: 0 0.3rem;
    border-radius: 999px; background: #dc2626; color: #fff; font-size: 0.75rem; font-weight: 600; line-height: 1.25rem;
  }
  [part="badge"][hidden] { display: none; }
  [part="panel"] {
    position: absolute; right: 0; top: calc(100% + 0.5rem); z-index: 10; width: var(--herald-width);
    max-height: 28rem; display: flex; flex-direction: column; background: var(--herald-background);
    border: 1px solid var(--herald-border); border-radius: var(--herald-radius); box-shadow: 0 10px 30px rgb(0 0 0 / 0.15);
  }
  [part="panel"][hidden] { display: none; }
  [part="header"] { display: flex; align-items: center; justify-content: space-between; padding: 0.75rem 1rem; border-bottom: 1px solid var(--herald-border); }
  h2 { margin: 0; font-size: 1rem; }
  [part="mark-all"], [part="more"], [part="retry"] { border: 0; background: none; color: var(--herald-accent); padding: 0.25rem; }
  [part="list"] { list-style: none; margin: 0; padding: 0; overflow-y: auto; }
  [part="item"] { border-bottom: 1px solid var(--herald-border); }
  [part="item"][data-unread] { background: var(--herald-unread); }
  [part="link"] { display: block; padding: 0.75rem 1rem; color: inherit; text-decoration: none; }
  [part="link"] strong { display: block; }
  [part="link"] strong::before { content: ""; }
  [part="item"][data-unread] [part="link"] strong::before {
    content: ""; display: inline-block; width: 0.5rem; height: 0.5rem; margin-right: 0.4rem; border-radius: 50%; background: var(--herald-accent);
  }
  [part="link"] p { margin: 0.2rem 0; }
  [part="link"] time { color: var(--herald-muted); font-size: 0.8rem; }
  [part="empty"], [part="error"] { margin: 0; padding: 1.5rem 1rem; text-align: center; color: var(--herald-muted); }
  [part="more"] { margin: 0.5rem auto; display: block; }
  .announcer { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
</style>
<button part="bell" type="button" aria-haspopup="dialog" aria-expanded="false" aria-controls="panel">
  <svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" aria-hidden="true"><path d="M18 8a6 6 0 1 0-12 0c0 7-3 9-3 9h18s-3-2-3-9"/><path d="M13.7 21a2 2 0 0 1-3.4 0"/></svg>
  <span part="badge" aria-hidden="true" hidden></span>
</button>
<div part="panel" id="panel" role="dialog" aria-labelledby="heading" hidden>
  <div part="header">
    <h2 id="heading" tabindex="-1">Notifications</h2>
    <button part="mark-all" type="button">Mark all read</button>
  </div>
  <ul part="list" aria-labelledby="heading"></ul>
  <p part="empty" hidden>You are all caught up.</p>
  <p part="error" role="alert" hidden><span></span> <button part="retry" type="button">Try again</button></p>
  <button part="more" type="button" hidden>Older notifications</button>
</div>
<div class="announcer" aria-live="polite"></div>
`;

/**
 * `<herald-feed>`: a bell with the unread badge that opens a panel of one channel's notifications —
 * live, marked read, older pages as the list scrolls.
 *
 * ```html
 * <herald-feed channel="orders"></herald-feed>
 * <script type="module">
 *   document.querySelector("herald-feed").client = new HeraldClient({ baseURL, sessionToken });
 * </script>
 * ```
 *
 * Attributes: `channel` (its URL), `category` (only that category), `theme` (`light` or `dark`;
 * otherwise the page's color scheme). Themed with CSS custom properties (`--herald-accent`,
 * `--herald-background`, `--herald-foreground`, `--herald-muted`, `--herald-border`,
 * `--herald-unread`, `--herald-radius`, `--herald-width`, `--herald-font`) and `::part()` (`bell`,
 * `badge`, `panel`, `header`, `mark-all`, `list`, `item`, `link`, `empty`, `error`, `retry`,
 * `more`). A notification shows its data's `title` and `body` and links to its `action_url` (or
 * `url`).
 */
export class HeraldFeedElement extends HTMLElement {
  static observedAttributes = ["channel", "category"];

  constructor() {
    super();
    const root = this.attachShadow({ mode: "open" });
    root.append(template.content.cloneNode(true));
    /** @type {import("./client.js").HeraldClient | null} */
    this.heraldClient = null;
    /** @type {import("./collection.js").NotificationCollection | null} */
    this.collection = null;
    /** @type {(() => void)[]} */
    this.unsubscribe = [];
    /** @type {string | null} Why the last load or action failed, shown until one succeeds. */
    this.failed = null;
    const $ = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (root.querySelector(selector));
    this.bell = /** @type {HTMLButtonElement} */ ($('[part="bell"]'));
    this.badge = $('[part="badge"]');
    this.panel = $('[part="panel"]');
    this.heading = $("#heading");
    this.list = $('[part="list"]');
    this.empty = $('[part="empty"]');
    this.failure = $('[part="error"]');
    this.more = /** @type {HTMLButtonElement} */ ($('[part="more"]'));
    this.announcer = $(".announcer");
    this.bell.addEventListener("click", () => (this.panel.hidden ? this.open() : this.close()));
    $('[part="mark-all"]').addEventListener("click", () => this.run(() => this.collection?.markRead()));
    $('[part="retry"]').addEventListener("click", () => this.load());
    this.more.addEventListener("click", () => this.run(() => this.collection?.loadPrevious()));
    this.panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation();
        this.close();
        this.bell.focus();
      }
    });
    this.list.addEventListener("scroll", () => {
      const { scrollTop, scrollHeight, clientHeight } = this.list;
      if (scrollHeight - scrollTop - clientHeight < 80 && this.collection?.hasPrevious) this.run(() => this.collection?.loadPrevious());
    });
    // Enter and Space press an item that is a button, as they would a real one.
    this.list.addEventListener("keydown", (event) => {
      const target = /** @type {HTMLElement} */ (event.target);
      if ((event.key === "Enter" || event.key === " ") && target.getAttribute("role") === "button") {
        event.preventDefault();
        target.click();
      }
    });
    this.list.addEventListener("click", (event) => {
      const item = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (event.target).closest('[part="item"]'));
      const id = item?.dataset.id;
      if (!id || !this.collection) return;
      const collection = this.collection;
      this.run(async () => {
        await collection.log("clicked", [id]);
        if (item?.hasAttribute("data-unread")) await collection.markRead([id]);
      });
    });
    this.render();
  }

  /** The client the feed reads through (set it before or after the element is in the page). */
  get client() {
    return this.heraldClient;
  }

  set client(client) {
    this.heraldClient = client;
    this.attach();
  }

  connectedCallback() {
    this.attach();
  }

  disconnectedCallback() {
    this.detach();
  }

  attributeChangedCallback() {
    if (this.isConnected) this.attach();
  }

  /** Opens the panel, moves focus into it and marks the channel seen. */
  open() {
    this.panel.hidden = false;
    this.bell.setAttribute("aria-expanded", "true");
    this.heading.focus();
    const collection = this.collection;
    if (collection?.isLive) this.run(() => collection.markSeen());
  }

  /** Closes the panel. */
  close() {
    this.panel.hidden = true;
    this.bell.setAttribute("aria-expanded", "false");
  }

  attach() {
    this.detach();
    const client = this.heraldClient;
    const channel = this.getAttribute("channel");
    if (!client || !channel || !this.isConnected) return;
    const collection = client.collection(channel, { category: this.getAttribute("category") });
    this.collection = collection;
    // The newest id a change has brought so far (null before the first): judged by the changes
    // alone, not by what is shown, since the list may be drawn (for an unread count that came first)
    // after the collection took a new notification and before its change event.
    /** @type {bigint | null} */
    let newestSeen = null;
    const changed = (/** @type {Event} */ event) => {
      const detail = /** @type {CustomEvent} */ (event).detail;
      const inserted = /** @type {string[]} */ (detail?.inserted ?? []);
      // New ones that arrived live are announced; a first load or a page of older ones is not.
      const fresh = newestSeen === null ? [] : inserted.filter((id) => BigInt(id) > /** @type {bigint} */ (newestSeen));
      if (fresh.length > 0) {
        const newest = collection.notifications.find((notification) => notification.id === fresh[0]);
        this.announcer.textContent = `New notification: ${title(newest)}`;
      }
      newestSeen = [...inserted, ...collection.notifications.map((notification) => notification.id)].reduce(
        (newest, id) => (BigInt(id) > newest ? BigInt(id) : newest),
        newestSeen ?? 0n,
      );
      this.render();
    };
    const unread = () => this.render();
    // A load (the first, or afresh) is not announced, and what it brought is seen: a send after it
    // is announced even when no change event came in between.
    const reloaded = () => {
      newestSeen = collection.notifications.reduce((newest, { id }) => (BigInt(id) > newest ? BigInt(id) : newest), newestSeen ?? 0n);
      this.render();
    };
    collection.addEventListener("change", changed);
    collection.addEventListener("reload", reloaded);
    client.addEventListener("unread", unread);
    this.unsubscribe = [
      () => collection.removeEventListener("change", changed),
      () => collection.removeEventListener("reload", reloaded),
      () => client.removeEventListener("unread", unread),
    ];
    this.load();
  }

  detach() {
    for (const stop of this.unsubscribe) stop();
    this.unsubscribe = [];
    this.collection = null;
  }

  load() {
    this.run(() => this.collection?.refresh());
  }

  /**
   * Runs `work`, showing its failure in the panel until the next success.
   * @param {() => Promise<unknown> | undefined} work
   */
  async run(work) {
    try {
      await work();
      this.failed = null;
    } catch (error) {
      this.failed = error instanceof HeraldError && error.status === 0 ? "Herald cannot be reached." : "Notifications could not be loaded.";
    }
    this.render();
  }

  render() {
    const collection = this.collection;
    const notifications = collection?.notifications ?? [];
    const count = collection?.state.unread_count ?? 0;
    this.badge.hidden = count === 0;
    this.badge.textContent = count > 99 ? "99+" : String(count);
    this.bell.setAttribute("aria-label", count === 0 ? "Notifications" : `Notifications, ${count} unread`);
    // Items are kept by id and changed in place, and only what moved is moved: rebuilding the list
    // would take the focus from the item a keyboard user is on at every change.
    /** @type {Map<string, HTMLLIElement>} */
    const held = new Map();
    for (const item of /** @type {HTMLLIElement[]} */ ([...this.list.children])) held.set(/** @type {string} */ (item.dataset.id), item);
    const items = notifications.map((notification) => {
      const item = held.get(notification.id) ?? document.createElement("li");
      held.delete(notification.id);
      fill(item, notification);
      return item;
    });
    for (const gone of held.values()) gone.remove();
    items.forEach((item, index) => {
      if (this.list.children[index] !== item) this.list.insertBefore(item, this.list.children[index] ?? null);
    });
    this.empty.hidden = notifications.length > 0 || !collection?.isLive || Boolean(this.failed);
    this.failure.hidden = !this.failed;
    /** @type {HTMLElement} */ (this.failure.firstElementChild).textContent = this.failed ?? "";
    this.more.hidden = !collection?.hasPrevious;
  }
}

/**
 * Makes `item` show `notification` — its link element kept, so that focus on it stays — unless it
 * already does.
 * @param {HTMLLIElement} item
 * @param {import("./types.js").HeraldNotification} notification
 */
function fill(item, notification) {
  const target = notification.data?.action_url ?? notification.data?.url;
  const href = typeof target === "string" && /^https?:\/\//.test(target) ? target : null;
  const shown = JSON.stringify([notification.status, title(notification), notification.data?.body, href, relative(notification.created_at_ms)]);
  if (item.dataset.shown === shown) return;
  item.dataset.shown = shown;
  item.setAttribute("part", "item");
  item.dataset.id = notification.id;
  item.toggleAttribute("data-unread", notification.status !== "READ");
  const link = item.querySelector("a") ?? item.appendChild(document.createElement("a"));
  link.setAttribute("part", "link");
  // One without a place to go is a button (a click marks it read), not a link to the top of the page.
  if (href) {
    link.href = href;
    link.removeAttribute("role");
    link.removeAttribute("tabindex");
  } else {
    link.removeAttribute("href");
    link.setAttribute("role", "button");
    link.tabIndex = 0;
  }
  const heading = document.createElement("strong");
  heading.textContent = title(notification);
  /** @type {HTMLElement[]} */
  const parts = [heading];
  if (typeof notification.data?.body === "string") {
    const body = document.createElement("p");
    body.textContent = notification.data.body;
    parts.push(body);
  }
  const time = document.createElement("time");
  time.dateTime = notification.created_at;
  time.textContent = relative(notification.created_at_ms);
  parts.push(time);
  link.replaceChildren(...parts);
  if (notification.status !== "READ") link.setAttribute("aria-label", `Unread: ${title(notification)}`);
  else link.removeAttribute("aria-label");
}

/** @param {any} notification */
function title(notification) {
  const text = notification?.data?.title;
  return typeof text === "string" && text !== "" ? text : notification?.template_key ?? "Notification";
}

const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

/** @param {number} milliseconds */
function relative(milliseconds) {
  const seconds = Math.round((milliseconds - Date.now()) / 1000);
  for (const [unit, size] of /** @type {[Intl.RelativeTimeFormatUnit, number][]} */ ([
    ["year", 31_536_000],
    ["month", 2_592_000],
    ["day", 86_400],
    ["hour", 3_600],
    ["minute", 60],
  ])) {
    if (Math.abs(seconds) >= size) return relativeFormat.format(Math.round(seconds / size), unit);
  }
  return relativeFormat.format(seconds, "second");
}

if (!customElements.get("herald-feed")) customElements.define("herald-feed", HeraldFeedElement);
