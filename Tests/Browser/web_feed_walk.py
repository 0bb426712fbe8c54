"""Walks the web client's demo page in headless Chromium, served from another origin than Herald's.

Run by WebFeedBrowserTests (Tests/HeraldServerTests), with Herald's settings in the environment
(HERALD_CORS_ORIGINS naming http://127.0.0.1:PAGE_PORT, HERALD_ADMIN_TOKEN = ADMIN_TOKEN):

    python3 Tests/Browser/web_feed_walk.py --herald-binary HERALD --sql-dir sql \
        --token ADMIN_TOKEN --page-port PORT --other-port PORT --demo web/demo.html --screenshots DIR

It starts `herald serve` itself on a port the kernel picks (and kills it and starts it again there).

It serves the demo page itself on PAGE_PORT (listed) and OTHER_PORT (not listed), makes a user, a
session and a channel through the admin API, and checks that the page on the listed origin loads the
feed through CORS, shows a send live within a second, marks read, pages, is walked by keyboard
alone, and comes back by itself after Herald is killed and started again; that its service worker, loading herald-worker.js from Herald, shows an alert push and posts its
receipt and answers a refresh push; that, loaded again while every sync is refused, it shows the feed
it kept in IndexedDB; that the page on the other origin is refused by the browser; and that the browser console stays
clean. Screenshots, light and dark, go to DIR. Uses Debian's chromium and chromium-driver through
Selenium; nothing is downloaded. Exits non-zero, saying why, at the first failure.
"""

import argparse
import functools
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


class Herald:
    """`herald serve` on a port of its own, and the admin calls the walk makes."""

    def __init__(self, binary, sql, token):
        self.binary, self.sql, self.token = binary, sql, token
        self.port = 0
        self.url = None
        self.process = None

    def start(self):
        """Starts it: the first time on a port the kernel picks (a port chosen ahead could be taken
        meanwhile), later on the same port, which the page knows it by."""
        command = [self.binary, "serve", "--port", str(self.port), "--sql-dir", self.sql]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in self.process.stdout:
            if "Herald listening on" in line:
                self.url = line.split()[-1].rstrip("/")
                self.port = int(self.url.rsplit(":", 1)[1])
                # Keep reading, so that the server never blocks on a full pipe.
                threading.Thread(target=lambda: [None for _ in self.process.stdout], daemon=True).start()
                return
        fail("herald serve exited before it listened")

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def admin(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", "Bearer " + self.token)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            return json.loads(text) if text else None

    def send(self, channel, user, title):
        return self.admin("POST", "/v1/notifications", {
            "channel_url": channel, "template_key": "walk", "targets": [user],
            "variables": {"title": title, "url": "https://example.com/" + title.replace(" ", "-")},
        })["id"]


# The page's service worker: Herald's helper, and a record of the notifications it shows (told to the
# page: headless Chromium's getNotifications() does not always list one just shown).
SERVICE_WORKER = """importScripts("HERALD/client/herald-worker.js");
const show = self.registration.showNotification.bind(self.registration);
self.registration.showNotification = async (title, options) => {
  await show(title, options);
  for (const page of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) page.postMessage({ type: "walk.shown", title });
};
HeraldWorker.listen();
"""

# Registers the page's service worker and enables Web Push on the demo's client; returns the device
# id (or why not).
ENABLE_PUSH = """
const done = arguments[arguments.length - 1];
(async () => {
  const registration = await navigator.serviceWorker.register("/sw.js");
  await navigator.serviceWorker.ready;
  const client = document.querySelector("herald-feed").client;
  const pair = await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
  const text = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
  const keys = { p256dh: text(await crypto.subtle.exportKey("raw", pair.publicKey)), auth: text(crypto.getRandomValues(new Uint8Array(16))) };
  const endpoint = "https://fcm.googleapis.com/fcm/send/web-feed-walk";
  const pushManager = {
    getSubscription: async () => null,
    subscribe: async ({ applicationServerKey }) => ({ endpoint, options: { applicationServerKey }, toJSON: () => ({ endpoint, keys }) }),
  };
  window.heraldRefreshes = 0;
  window.heraldShown = [];
  navigator.serviceWorker.addEventListener("message", (message) => {
    if (message.data?.type === "herald.refresh") window.heraldRefreshes += 1;
    if (message.data?.type === "walk.shown") window.heraldShown.push(message.data.title);
  });
  // A push handed to a worker still activating is dropped: wait until it is activated.
  const worker = registration.active;
  if (!worker) throw new Error("the service worker is not active");
  if (worker.state !== "activated") {
    await new Promise((resolve) => worker.addEventListener("statechange", () => worker.state === "activated" && resolve(undefined)));
  }
  return await client.enablePush({ pushManager });
})().then(done, (error) => done("failed: " + error));
"""

# Whether Herald has seen the device sync (the worker's answer to a refresh push).
DEVICE_SYNCED = """
const [device, done] = [arguments[0], arguments[arguments.length - 1]];
document.querySelector("herald-feed").client.api.request("GET", "/v1/me/devices")
  .then((answer) => done(answer.devices.some((entry) => entry.id === device && entry.last_synced_at !== null)), () => done(false));
"""


def serve(directory, port):
    """A static server for the demo page on 127.0.0.1:port, in a thread."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Walk:
    def __init__(self, screenshots):
        self.screenshots = screenshots
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,800"]:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_page_load_timeout(30)

    def close(self):
        self.driver.quit()

    def shadow(self, script):
        """Runs `script` with `root` bound to the feed's shadow root; returns its value."""
        return self.driver.execute_script(
            "const root = document.querySelector('herald-feed')?.shadowRoot; if (!root) return null;" + script)

    def until(self, what, condition, timeout=15):
        try:
            WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(lambda _: condition())
        except Exception as error:
            status = self.driver.execute_script("return document.getElementById('status')?.textContent")
            fail(f"timed out waiting for {what} ({type(error).__name__}; page status: {status}; console: {self.console_errors()})")

    def console_errors(self):
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def push(self, origin, payload):
        """Hands the page's service worker a push with `payload` (as Herald's would be once decrypted)."""
        self.driver.execute_cdp_cmd("ServiceWorker.enable", {})
        # The profile is new and the page registers one worker: its registration is the first.
        self.driver.execute_cdp_cmd("ServiceWorker.deliverPushMessage", {"origin": origin, "registrationId": "0", "data": json.dumps(payload)})

    def notifications(self):
        """The titles of the notifications the page's service worker has shown."""
        return self.driver.execute_script("return window.heraldShown")

    def screenshot(self, name):
        os.makedirs(self.screenshots, exist_ok=True)
        self.driver.save_screenshot(os.path.join(self.screenshots, name))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--herald-binary", required=True)
    parser.add_argument("--sql-dir", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--page-port", type=int, required=True)
    parser.add_argument("--other-port", type=int, required=True)
    parser.add_argument("--demo", required=True)
    parser.add_argument("--screenshots", required=True)
    arguments = parser.parse_args()

    herald = Herald(arguments.herald_binary, arguments.sql_dir, arguments.token)
    herald.start()
    channel, user = "walk-orders", "walker"
    herald.admin("PUT", "/v1/channels/" + channel, {"kind": "feed", "name": "Orders"})
    herald.admin("PUT", "/v1/templates/walk", {
        "name": "Walk", "variables": [{"name": "title", "type": "string", "required": True}, {"name": "url", "type": "string"}],
        "data": {"title": "{{title}}", "body": "Your order: {{title}}", "action_url": "{{url}}"},
    })
    herald.admin("PUT", "/v1/users/" + user, {"nickname": "Walker"})
    session = herald.admin("POST", f"/v1/users/{user}/sessions")["token"]
    sent = [herald.send(channel, user, f"order {index}") for index in range(40)]

    # The page served from the other origins, told where Herald is in its markup.
    pages = tempfile.mkdtemp()
    with open(arguments.demo) as source, open(os.path.join(pages, "demo.html"), "w") as copy:
        page = source.read()
        marker = '<meta name="herald-url" content="">'
        if marker not in page:
            fail("the demo page has no herald-url meta to fill")
        copy.write(page.replace(marker, f'<meta name="herald-url" content="{herald.url}">'))
    # The page's own service worker, which loads Herald's helper.
    with open(os.path.join(pages, "sw.js"), "w") as worker:
        worker.write(SERVICE_WORKER.replace("HERALD", herald.url))
    listed = serve(pages, arguments.page_port)
    other = serve(pages, arguments.other_port)
    walk = Walk(arguments.screenshots)
    try:
        fragment = f"#session={session}&channel={channel}"
        walk.driver.get(f"http://127.0.0.1:{arguments.page_port}/demo.html{fragment}")
        walk.until("the feed to load through CORS", lambda: walk.shadow("return root.querySelectorAll('[part=item]').length") == 30)
        if walk.shadow("return root.querySelector('[part=badge]').textContent") != "40":
            fail("the badge does not show 40 unread")
        walk.until("the stream to open", lambda: "connected" in walk.driver.find_element("id", "status").text)

        # Keyboard only: Tab reaches the bell, Enter opens the panel with focus inside, Escape closes
        # it and gives focus back to the bell.
        body = walk.driver.find_element("tag name", "body")
        body.send_keys(Keys.TAB)
        focused = walk.driver.execute_script("return document.activeElement.tagName.toLowerCase() + '|' + (document.activeElement.shadowRoot?.activeElement?.getAttribute('part') ?? '')")
        if focused != "herald-feed|bell":
            fail(f"Tab did not reach the bell: {focused}")
        walk.driver.switch_to.active_element.send_keys(Keys.ENTER)
        walk.until("the panel to open", lambda: walk.shadow("return !root.querySelector('[part=panel]').hidden"))
        if walk.shadow("return root.activeElement?.id") != "heading":
            fail("focus did not move into the panel")
        if walk.shadow("return root.querySelector('[part=bell]').getAttribute('aria-expanded')") != "true":
            fail("the bell does not say it is expanded")
        walk.screenshot("web-feed-light.png")

        # A send appears live within a second of its answer, and is announced; the item a keyboard
        # user is on keeps the focus.
        focused_id = walk.shadow("const link = root.querySelector('[part=link][href]'); link.focus(); return root.activeElement === link ? link.closest('[part=item]').dataset.id : null")
        if focused_id is None:
            fail("an item's link cannot take the focus")
        live = herald.send(channel, user, "order live")
        started = time.monotonic()
        walk.until("the live send", lambda: walk.shadow("return root.querySelector('[part=item]')?.dataset.id") == live, timeout=5)
        if time.monotonic() - started > 1.0:
            fail(f"the send took {time.monotonic() - started:.2f} s to show")
        if "order live" not in walk.shadow("return root.querySelector('.announcer').textContent"):
            fail("the new notification was not announced")
        if walk.shadow("return root.activeElement?.closest('[part=item]')?.dataset.id") != focused_id:
            fail("a live send took the focus from the item the keyboard was on")

        # Older pages: the button brings them (scrolling does too).
        walk.shadow("root.querySelector('[part=more]').click()")
        walk.until("the older page", lambda: walk.shadow("return root.querySelectorAll('[part=item]').length") == 41)
        ids = walk.shadow("return [...root.querySelectorAll('[part=item]')].map((item) => item.dataset.id)")
        if ids != [live] + list(reversed(sent)):
            fail(f"the list is not every notification, newest first, once: {ids}")

        # Mark all read: the badge goes, and no item is unread.
        walk.shadow("root.querySelector('[part=mark-all]').click()")
        walk.until("everything read", lambda: walk.shadow("return root.querySelector('[part=badge]').hidden && !root.querySelector('[part=item][data-unread]')"))

        walk.driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        walk.until("the panel to close", lambda: walk.shadow("return root.querySelector('[part=panel]').hidden"))
        if walk.shadow("return root.activeElement?.getAttribute('part')") != "bell":
            fail("Escape did not give focus back to the bell")

        # Web Push: the page's service worker loads herald-worker.js from Herald; enablePush registers
        # the browser as the user's device and leaves the worker its credentials in Cache Storage.
        # The browser's push service cannot be reached here, so the subscription's browser half is
        # stood in for, and Chromium hands the worker pushes itself (DevTools' deliverPushMessage)
        # with the content Herald's pushes carry once decrypted.
        page_origin = f"http://127.0.0.1:{arguments.page_port}"
        walk.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": page_origin, "permissions": ["notifications"]})
        device = walk.driver.execute_async_script(ENABLE_PUSH)
        if not isinstance(device, str) or not device.isdigit():
            fail(f"enablePush did not register the browser: {device}")
        alerted = herald.send(channel, user, "order alert")
        walk.push(page_origin, {"notification": {"title": "Order alert", "body": "Your order is on its way"},
                                "herald": {"message_id": int(alerted)}, "url": page_origin + "/demo.html"})
        walk.until("the alert to be shown", lambda: "Order alert" in walk.notifications())
        walk.until("the alert's receipt", lambda: herald.admin("GET", f"/v1/notifications/{alerted}")["counts"]["delivered"] == 1)
        walk.push(page_origin, {"herald": {"type": "refresh", "badge": 1, "channels": []}})
        walk.until("the page to hear of the refresh", lambda: walk.driver.execute_script("return window.heraldRefreshes") >= 1)
        walk.until("the worker to sync naming the device", lambda: walk.driver.execute_async_script(DEVICE_SYNCED, device))

        # The cache: loaded again while Herald answers no sync, the page shows the feed it last had.
        held = walk.shadow("return [...root.querySelectorAll('[part=item]')].map((item) => item.dataset.id)")
        walk.driver.execute_cdp_cmd("Network.enable", {})
        walk.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/v1/me/channels/*"]})
        walk.driver.refresh()
        walk.until("the feed kept in IndexedDB", lambda: walk.shadow("return [...root.querySelectorAll('[part=item]')].map((item) => item.dataset.id)") == held)
        walk.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        # The syncs it was refused are the only errors there may be.
        unexpected = [message for message in walk.console_errors() if "ERR_BLOCKED_BY_CLIENT" not in message and "could not" not in message.lower()]
        if unexpected:
            fail(f"the browser console has errors: {unexpected}")

        # Killed and started again: the stream notices, comes back by itself, and live sends show again.
        walk.until("the stream to open after the reload", lambda: "connected" in walk.driver.find_element("id", "status").text)
        herald.kill()
        walk.until("the stream to notice", lambda: "connected" not in walk.driver.find_element("id", "status").text)
        herald.start()
        walk.until("the stream to come back", lambda: "connected" in walk.driver.find_element("id", "status").text, timeout=90)
        after = herald.send(channel, user, "order after restart")
        walk.until("a live send after the restart", lambda: walk.shadow("return root.querySelector('[part=item]')?.dataset.id") == after, timeout=10)
        # The network errors of the kill are expected: connections refused while it was down, and a
        # request in flight at the kill cut (reset, or closed before an answer).
        killed = ("ERR_CONNECTION_REFUSED", "ERR_CONNECTION_RESET", "ERR_EMPTY_RESPONSE", "WebSocket")
        unexpected = [message for message in walk.console_errors() if not any(mark in message for mark in killed)]
        if unexpected:
            fail(f"the browser console has errors after the restart: {unexpected}")

        shown = walk.shadow("return root.querySelectorAll('[part=item]').length")

        # Herald's own demo page (HERALD_DEMO=on): the same feed, from Herald's origin.
        walk.driver.get(f"{herald.url}/demo{fragment}")
        walk.until("the feed on Herald's own demo page", lambda: walk.shadow("return root.querySelectorAll('[part=item]').length") == 30)

        # Dark: the same page with theme=dark.
        # (A query of its own: a change of the fragment alone would not load the page again.)
        walk.driver.get(f"http://127.0.0.1:{arguments.page_port}/demo.html?dark{fragment}&theme=dark")
        # (From the cache: what the page held last, which is more than a first page.)
        walk.until("the dark feed", lambda: walk.shadow("return root.querySelectorAll('[part=item]').length") == shown)
        walk.shadow("root.querySelector('[part=bell]').click()")
        walk.screenshot("web-feed-dark.png")
        errors = walk.console_errors()
        if errors:
            fail(f"the browser console has errors: {errors}")

        # A page on an origin Herald does not list cannot load the client: the browser refuses it.
        walk.driver.get(f"http://127.0.0.1:{arguments.other_port}/demo.html{fragment}")
        refusals = []
        walk.until("the browser to refuse the client", lambda: refusals.extend(m for m in walk.console_errors() if "CORS policy" in m) or refusals)
        if walk.driver.execute_script("return customElements.get('herald-feed') !== undefined || document.querySelector('herald-feed').shadowRoot !== null"):
            fail("a page on an origin not listed loaded the feed")
    finally:
        walk.close()
        herald.kill()
        listed.shutdown()
        other.shutdown()
        shutil.rmtree(pages, ignore_errors=True)
    print("the web feed walk passed")


if __name__ == "__main__":
    main()
