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
    static observedAttributes: string[];
    /** @type {import("./client.js").HeraldClient | null} */
    heraldClient: import("./client.js").HeraldClient | null;
    /** @type {import("./collection.js").NotificationCollection | null} */
    collection: import("./collection.js").NotificationCollection | null;
    /** @type {(() => void)[]} */
    unsubscribe: (() => void)[];
    /** @type {string | null} Why the last load or action failed, shown until one succeeds. */
    failed: string | null;
    bell: HTMLButtonElement;
    badge: HTMLElement;
    panel: HTMLElement;
    heading: HTMLElement;
    list: HTMLElement;
    empty: HTMLElement;
    failure: HTMLElement;
    more: HTMLButtonElement;
    announcer: HTMLElement;
    set client(arg: import("./client.js").HeraldClient | null);
    /** The client the feed reads through (set it before or after the element is in the page). */
    get client(): import("./client.js").HeraldClient | null;
    connectedCallback(): void;
    disconnectedCallback(): void;
    attributeChangedCallback(): void;
    /** Opens the panel, moves focus into it and marks the channel seen. */
    open(): void;
    /** Closes the panel. */
    close(): void;
    attach(): void;
    detach(): void;
    load(): void;
    /**
     * Runs `work`, showing its failure in the panel until the next success.
     * @param {() => Promise<unknown> | undefined} work
     */
    run(work: () => Promise<unknown> | undefined): Promise<void>;
    render(): void;
}
