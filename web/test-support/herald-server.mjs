// A real `herald serve` for the web client's tests, and the admin calls they make on it.
//
// The binary is HERALD_BINARY, else the debug build in the repository. The database is DATABASE_URL
// (and the other variables Herald reads) when the caller gives one — `swift test` runs these tests
// on a throwaway database of its own (WebClientTests) — else Herald's embedded default in a
// temporary directory.

import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repository = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const passedThrough = ["DATABASE_URL", "HERALD_DIRECT_DATABASE_URL", "HERALD_DB_PREPARED_STATEMENTS", "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR"];

export class HeraldServer {
  /**
   * Starts `herald serve` on a free port (or `port`) and waits until it listens.
   * @param {{environment?: Record<string, string>, port?: number}} [options]
   */
  static async start({ environment = {}, port = 0 } = {}) {
    const server = new HeraldServer(environment);
    await server.launch(port);
    return server;
  }

  /** @param {Record<string, string>} environment */
  constructor(environment) {
    this.adminToken = "web-client-test-admin-" + randomBytes(12).toString("hex");
    this.dataDirectory = process.env.DATABASE_URL ? null : mkdtempSync(join(tmpdir(), "herald-web-test-"));
    // The embedded cluster runs as the `postgres` user, who must reach its directory.
    if (this.dataDirectory) chmodSync(this.dataDirectory, 0o711);
    /** @type {Record<string, string>} */
    this.environment = {
      HERALD_ADMIN_TOKEN: this.adminToken,
      // One key per database: the test files share swift test's database, and what one server sealed
      // (the VAPID key made at its first start) the next must open.
      HERALD_SECRET_KEY: process.env.DATABASE_URL ? createHash("sha256").update(process.env.DATABASE_URL).digest("hex") : randomBytes(32).toString("hex"),
      HERALD_LOG_LEVEL: "notice",
      // The tests make more requests a second from one session and one address than a page would.
      HERALD_RATE_LIMIT_SESSION: "off",
      HERALD_RATE_LIMIT_ADDRESS: "off",
      ...environment,
    };
    for (const name of passedThrough) if (process.env[name] !== undefined) this.environment[name] = /** @type {string} */ (process.env[name]);
    if (this.dataDirectory) this.environment.HERALD_DATA_DIR = this.dataDirectory;
    /** @type {import("node:child_process").ChildProcess | null} */
    this.process = null;
    this.url = "";
    this.port = 0;
    this.output = "";
  }

  /** @param {number} port */
  async launch(port) {
    const binary = process.env.HERALD_BINARY ?? join(repository, ".build", "debug", "herald");
    const child = spawn(binary, ["serve", "--port", String(port), "--sql-dir", join(repository, "sql")], {
      env: this.environment,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.process = child;
    const listening = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("herald serve did not start in 120 s:\n" + this.output)), 120_000);
      /** @param {Buffer} chunk */
      const read = (chunk) => {
        this.output += chunk.toString();
        const match = this.output.match(/Herald listening on (http:\/\/\S+)/);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      child.stdout?.on("data", read);
      child.stderr?.on("data", read);
      child.on("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`herald serve exited (${code}) before it listened:\n${this.output}`));
      });
    });
    this.url = new URL(/** @type {string} */ (await listening)).origin;
    this.port = Number(new URL(this.url).port);
    this.output = "";
    // Also makes Node's pool of connections, whose kind `SeparateWebSocket` borrows.
    const health = await fetch(this.url + "/healthz");
    if (!health.ok) throw new Error(`/healthz answered ${health.status}`);
  }

  /** Kills the process (SIGKILL, as a crash) and waits until it is gone. */
  async kill() {
    await this.stop("SIGKILL");
  }

  /**
   * Stops the process and waits until it is gone.
   * @param {NodeJS.Signals} [signal]
   */
  async stop(signal = "SIGTERM") {
    const child = this.process;
    this.process = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise((resolve) => {
      child.once("exit", resolve);
      child.kill(signal);
    });
  }

  /** Starts it again on the same port and database. */
  async restart() {
    await this.launch(this.port);
  }

  /** Stops it for good and removes the embedded database, if it made one. */
  async close() {
    await this.stop();
    if (this.dataDirectory) rmSync(this.dataDirectory, { recursive: true, force: true });
  }

  /**
   * An admin request; the parsed answer. Throws on a status that is not 2xx.
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   */
  async admin(method, path, body) {
    const response = await fetch(this.url + path, {
      method,
      headers: { Authorization: `Bearer ${this.adminToken}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text === "" ? null : JSON.parse(text);
  }

  /**
   * A user and a session for them; the session token.
   * @param {string} id
   */
  async session(id) {
    await this.admin("PUT", `/v1/users/${encodeURIComponent(id)}`, { nickname: id });
    const answer = await this.admin("POST", `/v1/users/${encodeURIComponent(id)}/sessions`);
    return /** @type {string} */ (answer.token);
  }

  /**
   * A channel `url` (a feed unless `kind` says otherwise; categories `news`, the default, and
   * `promo`) and the template `note` (`{"title": …}`, and a link from `url`).
   * @param {string} url
   * @param {{kind?: "feed" | "chat"}} [options]
   */
  async channel(url, { kind = "feed" } = {}) {
    await this.admin("PUT", `/v1/channels/${encodeURIComponent(url)}`, {
      kind,
      name: `Channel ${url}`,
      categories: [
        { id: "news", name: "News", is_default: true },
        { id: "promo", name: "Offers", is_default: false },
      ],
    });
    await this.admin("PUT", "/v1/templates/note", {
      name: "Note",
      variables: [
        { name: "title", type: "string", required: true },
        { name: "url", type: "string" },
      ],
      data: { title: "{{title}}", body: "About {{title}}", action_url: "{{url}}" },
      push_title: "{{title}}",
      actions: [
        { id: "ack", label: "Got it" },
        { id: "open", label: "Open", url: "https://example.com/open" },
      ],
    });
  }

  /**
   * Sends the `note` template to `targets` in `channel`; the notification's id.
   * @param {string} channel
   * @param {string[]} targets
   * @param {string} title
   * @param {{category?: string}} [options]
   * @returns {Promise<string>}
   */
  async send(channel, targets, title, { category } = {}) {
    const answer = await this.admin("POST", "/v1/notifications", {
      channel_url: channel,
      template_key: "note",
      targets,
      variables: { title, url: "https://example.com/" + encodeURIComponent(title) },
      ...(category ? { category } : {}),
    });
    return answer.id;
  }

  /**
   * One compaction pass (`herald compact`) on the server's database; its report. Needs DATABASE_URL
   * (the embedded cluster belongs to the running server).
   * @param {string} retention
   * @returns {Promise<string>}
   */
  async compact(retention) {
    if (!process.env.DATABASE_URL) throw new Error("compact needs DATABASE_URL");
    const binary = process.env.HERALD_BINARY ?? join(repository, ".build", "debug", "herald");
    const child = spawn(binary, ["compact", "--retention", retention, "--sql-dir", join(repository, "sql")], {
      env: { ...this.environment, HERALD_LOG_LEVEL: "warning" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout?.on("data", (chunk) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk) => (output += chunk.toString()));
    const code = await new Promise((resolve) => child.once("exit", resolve));
    if (code !== 0) throw new Error(`herald compact exited (${code}): ${output}`);
    return output;
  }

  /**
   * Opens a transaction that holds a transaction id on the server's database (through `psql`) and
   * keeps it open until `end()`: until then every sync's answer stops below it, as on a busy
   * cluster. Needs DATABASE_URL (`swift test` gives one).
   * @returns {Promise<{end: () => Promise<void>}>}
   */
  async holdTransaction() {
    const database = process.env.DATABASE_URL;
    if (!database) throw new Error("holdTransaction needs DATABASE_URL");
    const psql = spawn("psql", [database, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"], { stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    const exited = new Promise((resolve) => psql.once("exit", resolve));
    await new Promise((resolve, reject) => {
      psql.stdout?.on("data", (chunk) => {
        output += chunk.toString();
        if (/^\d+$/m.test(output)) resolve(undefined);
      });
      psql.stderr?.on("data", (chunk) => (output += chunk.toString()));
      psql.once("exit", (code) => reject(new Error(`psql exited (${code}) before it held a transaction: ${output}`)));
      psql.stdin?.write("BEGIN;\nSELECT pg_current_xact_id();\n");
    });
    let ended = false;
    return {
      end: async () => {
        if (ended) return;
        ended = true;
        psql.stdin?.end("COMMIT;\n");
        await exited;
      },
    };
  }
}

/**
 * Waits until every change to `channel` for the session's user is below a sync's horizon, so that the
 * next sync of any token returns them all: a sync holds back what transactions still open anywhere in
 * the database cluster might precede (other tests' too, on a shared cluster).
 * @param {string} url Herald's URL.
 * @param {string} session
 * @param {string} channel
 */
export async function settled(url, session, channel) {
  await waitUntil(`the changes of ${channel} to settle`, async () => {
    const answer = await fetch(`${url}/v1/me/channels/${encodeURIComponent(channel)}/collection?limit=100`, {
      headers: { Authorization: `Bearer ${session}` },
    }).then((response) => response.json());
    const newest = answer.notifications.reduce((/** @type {bigint} */ top, /** @type {any} */ n) => (BigInt(n.position) > top ? BigInt(n.position) : top), 0n);
    return BigInt(answer.horizon) > newest;
  });
}

/**
 * Node's WebSocket on a connection of its own, as a browser's always is. Node's own shares fetch's
 * pool of keep-alive connections, and Herald (on NIO's HTTP upgrader) upgrades only the first request
 * of a connection: a stream asked for on a connection that already served requests is refused (426).
 */
export class SeparateWebSocket extends WebSocket {
  /**
   * @param {string | URL} url
   * @param {string | string[]} [protocols]
   */
  constructor(url, protocols) {
    const Agent = /** @type {any} */ (globalThis)[Symbol.for("undici.globalDispatcher.1")]?.constructor;
    // @ts-ignore: Node's WebSocket also takes undici's options.
    super(url, Agent ? { protocols, dispatcher: new Agent() } : protocols);
  }
}

/**
 * Waits until `condition()` holds, trying every 20 ms, for at most `timeout` milliseconds.
 * @param {string} what
 * @param {() => boolean | Promise<boolean>} condition
 * @param {number} [timeout]
 */
export async function waitUntil(what, condition, timeout = 20_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
