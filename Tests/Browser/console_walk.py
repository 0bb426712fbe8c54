"""Walks the admin console in headless Chromium against a running `herald serve`.

Run by ConsoleBrowserTests (Tests/HeraldServerTests), which starts the server and its database:

    python3 Tests/Browser/console_walk.py --url http://127.0.0.1:PORT --token ADMIN_TOKEN --screenshots DIR

Uses Debian's chromium and chromium-driver through Selenium (python3-selenium); nothing is downloaded.
Every page it visits must log nothing to the browser console (a Content-Security-Policy violation
would) and pass the basic accessibility checks in `check_page`. A screenshot of each page is saved
in DIR. Exits non-zero, saying why, at the first failure.
"""

import argparse
import datetime
import json
import os
import subprocess
import tempfile
import sys
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class Walk:
    def __init__(self, url, token, screenshots):
        self.url = url.rstrip("/")
        self.token = token
        self.screenshots = screenshots
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"]:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.set_page_load_timeout(30)
        # Pages that render as they change (the template preview after each keystroke) replace the
        # element a condition is reading: such a read is tried again, not a failure.
        self.wait = WebDriverWait(self.driver, 15, ignored_exceptions=[NoSuchElementException, StaleElementReferenceException])

    def close(self):
        self.driver.quit()

    # Helpers ------------------------------------------------------------------------------------

    def open(self, path):
        self.driver.get(self.url + path)

    def path(self):
        return urllib.parse.urlparse(self.driver.current_url).path

    def expect(self, condition, message):
        if not condition:
            raise AssertionError(message + " (at " + self.driver.current_url + ")")

    def wait_for_path(self, path):
        self.wait.until(lambda driver: urllib.parse.urlparse(driver.current_url).path == path)

    def field(self, element_id):
        return self.driver.find_element(By.ID, element_id)

    def fill(self, element_id, text):
        element = self.field(element_id)
        element.clear()
        element.send_keys(text)

    def submit(self, css="main form button[type=submit]"):
        self.driver.find_element(By.CSS_SELECTOR, css).click()

    def heading(self):
        return self.driver.find_element(By.TAG_NAME, "h1").text

    def check_page(self, name):
        """No console output, basic accessibility, keyboard focus; then a screenshot."""
        self.wait.until(lambda driver: driver.execute_script("return document.readyState") == "complete")
        # The page's own status is not an error of the page: a refused sign-in is answered 401 and a
        # form with a problem 422, as HTTP says, and Chromium logs those loads too. Anything else a
        # page logs (a script error, a CSP violation, a file that did not load) fails the walk.
        page = self.driver.current_url.split("#")[0]
        logs = [
            entry
            for entry in self.driver.get_log("browser")
            if entry["level"] in ("SEVERE", "WARNING") and not (entry["source"] == "network" and entry["message"].startswith(page + " "))
        ]
        self.expect(not logs, name + ": the browser console logged " + repr(logs))
        problems = self.driver.execute_script(ACCESSIBILITY_CHECKS)
        self.expect(not problems, name + ": accessibility: " + "; ".join(problems))
        self.check_keyboard(name)
        # The whole page, from the top, for a reviewer to look at.
        self.driver.execute_script("window.scrollTo(0, 0); document.activeElement && document.activeElement.blur()")
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(1280, max(1000, min(height + 140, 4000)))
        self.driver.save_screenshot(os.path.join(self.screenshots, name + ".png"))
        self.driver.set_window_size(1280, 1000)

    def check_keyboard(self, name):
        """Tab reaches every link, button and field in order, and each shows where the focus is."""
        expected = self.driver.execute_script(
            "return [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea')]"
            ".filter(e => !e.disabled).length"
        )
        # Every page starts with the skip link: start there (focused by script, so its outline is not
        # checked) and go on with the keyboard.
        self.driver.execute_script("document.querySelector('a.skip').focus()")
        seen = ["A#Skip to the content"]
        # Keys go to the page, not to an element: sent to a file input, they would be taken for a path.
        def tab():
            ActionChains(self.driver).send_keys(Keys.TAB).perform()

        tab()
        # A date and time field takes a tab stop per part (day, month, year, hours, minutes, its
        # picker button): the focus stays on it for several presses.
        for _ in range(expected + 5 + 8 * len(self.driver.find_elements(By.CSS_SELECTOR, "input[type=datetime-local]"))):
            element = self.driver.switch_to.active_element
            description = self.driver.execute_script(
                "const e = arguments[0]; return e.tagName + '#' + (e.id || e.name || e.textContent.trim().slice(0, 20))", element
            )
            if description == seen[-1] and element.get_attribute("type") == "datetime-local":
                tab()
                continue
            if description in seen or element.tag_name == "body":
                break
            seen.append(description)
            outline = self.driver.execute_script("return getComputedStyle(arguments[0]).outlineStyle", element)
            self.expect(outline != "none", name + ": " + description + " shows no focus outline")
            tab()
        # Radio buttons of one group take a single tab stop.
        radios = self.driver.execute_script(
            "return new Set([...document.querySelectorAll('input[type=radio]')].map(e => e.name)).size"
            " - document.querySelectorAll('input[type=radio]').length"
        )
        self.expect(len(seen) >= expected + radios, name + ": Tab reached %d of %d controls: %s" % (len(seen), expected + radios, seen))

    def raw(self, method, path, data=None, cookie=None):
        """A request outside the browser: status, without following redirects."""

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(self.url + path, data=body, method=method)
        if body is not None:
            request.add_header("Content-Type", "application/x-www-form-urlencoded")
        if cookie:
            request.add_header("Cookie", "herald_console=" + cookie)
        try:
            with urllib.request.build_opener(NoRedirect).open(request) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    def api(self, method, path, body=None, token=None):
        """A JSON request to the HTTP API (the admin token unless another is given); the parsed answer."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", "Bearer " + (token or self.token))
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request) as response:
            text = response.read()
            return json.loads(text) if text else None

    # The walk -----------------------------------------------------------------------------------

    def prepare(self):
        """What the walk sends to, made through the API: a channel, a template in two versions, and a
        user with a session (the reader whose read moves the funnel)."""
        self.api("PUT", "/v1/channels/orders", {"kind": "feed", "name": "Orders"})
        self.api("PUT", "/v1/templates/shipped", {
            "name": "Shipped", "variables": [{"name": "order", "type": "string", "required": True}],
            "data": {"title": "Order {{order}} has shipped"}, "push_body": "Order {{order}} is on its way",
        })
        self.api("PUT", "/v1/templates/shipped", {
            "name": "Shipped", "variables": [{"name": "order", "type": "string", "required": True},
                                             {"name": "days", "type": "number", "default": 2}],
            "data": {"title": "Order {{order}} has shipped", "body": "It arrives in {{days}} days."},
            "push_body": "Order {{order}} is on its way",
        })
        self.api("PUT", "/v1/users/alice", {"nickname": "Alice"})
        self.alice = self.api("POST", "/v1/users/alice/sessions", {})["token"]
        self.api("PUT", "/v1/users/bob", {"nickname": "Bob"})
        self.files = tempfile.mkdtemp(prefix="console-walk-")

    def write(self, name, content):
        path = os.path.join(self.files, name)
        with open(path, "wb") as file:
            file.write(content if isinstance(content, bytes) else content.encode())
        return path

    def sign_in(self):
        self.open("/console")
        self.wait_for_path("/console/sign-in")
        self.check_page("sign-in")
        self.fill("token", "not-the-token")
        self.submit()
        self.wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".problem")))
        problem = self.driver.find_element(By.CSS_SELECTOR, ".problem").text
        self.expect("not this server" in problem, "a wrong token is refused: " + repr(problem))
        self.check_page("sign-in-refused")
        self.fill("token", self.token)
        self.submit()
        self.wait_for_path("/console")
        cookie = self.driver.get_cookie("herald_console")
        self.expect(cookie is not None and cookie["httpOnly"] and cookie.get("sameSite") == "Strict", "an HttpOnly, Strict cookie: %r" % cookie)
        self.expect(self.driver.execute_script("return document.cookie") == "", "scripts cannot read the cookie")
        self.cookie = cookie["value"]

    def overview(self):
        self.open("/console")
        self.expect(self.heading() == "Overview", "the overview's heading")
        self.expect(self.driver.find_element(By.CSS_SELECTOR, "svg.chart title").get_attribute("textContent").startswith("Sends"), "the chart")
        self.check_page("overview")

    def channels(self):
        self.driver.find_element(By.LINK_TEXT, "Channels").click()
        self.wait_for_path("/console/channels")
        self.check_page("channels")
        self.driver.find_element(By.LINK_TEXT, "New channel").click()
        self.wait_for_path("/console/channels/new")
        self.check_page("channel-new")
        self.fill("url", "browser-news")
        self.fill("name", "News from the browser")
        self.fill("categories", "general | General | default\nsales | Sales")
        self.fill("retention", "30d")
        self.submit()
        self.wait_for_path("/console/channels")
        self.driver.find_element(By.LINK_TEXT, "browser-news").click()
        self.wait_for_path("/console/channels/browser-news")
        self.expect(self.field("name").get_attribute("value") == "News from the browser", "the saved name")
        self.expect("sales | Sales" in self.field("categories").get_attribute("value"), "the saved categories")
        self.check_page("channel-edit")
        # A bad retention comes back on the form, with what was typed.
        self.fill("retention", "soon")
        self.submit()
        self.wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".problem")))
        self.expect("retention" in self.driver.find_element(By.CSS_SELECTOR, ".problem").text, "the retention's problem")
        self.check_page("channel-problem")
        self.fill("retention", "7d")
        self.submit()
        self.wait_for_path("/console/channels")

    def templates(self):
        self.driver.find_element(By.LINK_TEXT, "Templates").click()
        self.wait_for_path("/console/templates")
        self.check_page("templates")
        self.driver.find_element(By.LINK_TEXT, "shipped").click()
        self.wait_for_path("/console/templates/shipped")
        # The two versions side by side: the new variable and line are added.
        added = [row.text for row in self.driver.find_elements(By.CSS_SELECTOR, "table.diff tr.added")]
        self.expect(any("days" in text for text in added), "the diff shows version 2's additions: %r" % added)
        # Without samples the required variable is the problem, shown at its field.
        self.expect("order is required" in self.driver.find_element(By.ID, "v_order-problem").text, "the missing variable")
        self.check_page("template")
        # Typing a sample: the script fetches the preview as it changes.
        self.field("v_order").send_keys("A-1042")
        self.wait.until(lambda driver: "Order A-1042 has shipped" in driver.find_element(By.ID, "preview").text)
        payload = self.field("preview-payload").text
        self.expect("Order A-1042 is on its way" in payload, "the alert payload carries the push body: " + payload)
        self.expect(int(self.field("payload-size").text) < 4096, "the payload's size against 4 KB")
        # A number that is not one is pointed out where it was typed.
        self.field("v_days").send_keys("soon")
        self.submit("#preview-form button[type=submit]")
        self.wait.until(lambda driver: "days must be a number" in driver.page_source)
        self.check_page("template-preview-problem")

    def send(self):
        self.driver.find_element(By.LINK_TEXT, "Send").click()
        self.wait_for_path("/console/send")
        self.check_page("send-choose")
        self.driver.find_element(By.CSS_SELECTOR, "#template option[value=shipped]").click()
        self.submit("form.inline button[type=submit]")
        self.wait.until(expected_conditions.presence_of_element_located((By.ID, "send-form")))
        self.driver.find_element(By.CSS_SELECTOR, "#channel_url option[value=orders]").click()
        self.fill("v_order", "B-7")
        self.fill("targets", "alice")
        # The curl command follows the form.
        self.wait.until(lambda driver: '"targets":["alice"]' in driver.find_element(By.ID, "curl").text)
        curl = self.field("curl").text
        self.expect('"order":"B-7"' in curl and "/v1/notifications" in curl, "the request as curl: " + curl)
        self.check_page("send")
        self.submit("#send-form button[type=submit]")
        self.wait.until(lambda driver: urllib.parse.urlparse(driver.current_url).path.startswith("/console/notifications/"))
        self.notification = self.path().rsplit("/", 1)[1]
        self.expect(self.field("count-recipients").text == "1", "one recipient")
        self.expect(self.field("count-read").text == "0", "not read yet")
        self.expect("sent" in self.driver.find_element(By.CSS_SELECTOR, "#recipients + table tbody").text, "alice's copy, sent")
        self.check_page("notification")
        # Alice reads it through the API; the page's funnel catches up by itself.
        self.api("POST", "/v1/me/channels/orders/read", token=self.alice)
        self.wait.until(lambda driver: driver.find_element(By.ID, "count-read").text == "1")
        self.expect(self.field("count-delivered").text == "1", "read counts as delivered")
        self.check_page("notification-read")
        # The overview now counts the send and draws it in this hour's bar.
        self.open("/console")
        self.expect(self.field("sends").text == "1", "the overview counts the send")
        self.check_page("overview-after-send")
        self.driver.find_element(By.LINK_TEXT, "Notifications").click()
        self.wait_for_path("/console/notifications")
        self.expect(self.driver.find_elements(By.LINK_TEXT, self.notification), "the notification is listed")
        self.check_page("notifications")
        # An API refusal comes back on the form, in the API's words.
        self.open("/console/send?template=shipped&channel_url=orders")
        self.fill("targets", "nobody-here")
        self.fill("v_order", "C-1")
        self.submit("#send-form button[type=submit]")
        self.wait.until(expected_conditions.presence_of_element_located((By.ID, "send-problem")))
        self.expect("nobody-here" in self.field("send-problem").text, "the unknown user is named")
        self.check_page("send-refused")

    def scheduled(self):
        """A send with a local time is scheduled, listed, and cancelled from its row."""
        self.open("/console/send?template=shipped&channel_url=orders")
        self.fill("v_order", "D-9")
        self.fill("targets", "alice")
        day = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3)
        # A datetime-local field takes its value as the browser sends it, without seconds.
        self.driver.execute_script("document.getElementById('deliver_at_local').value = arguments[0]", day.strftime("%Y-%m-%dT09:00"))
        self.submit("#send-form button[type=submit]")
        self.wait_for_path("/console/scheduled")
        row = self.driver.find_element(By.CSS_SELECTOR, "main table tbody tr")
        self.expect("in each recipient" in row.text and "scheduled" in row.text, "the scheduled send is listed: " + row.text)
        self.check_page("scheduled")
        row.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        self.wait.until(lambda driver: "Cancelled" in driver.find_element(By.TAG_NAME, "main").text)
        self.expect(not self.driver.find_elements(By.CSS_SELECTOR, "main table tbody tr"), "no send waits any more")
        self.check_page("scheduled-cancelled")

    def fixtures(self):
        self.open("/console/templates")
        good = self.write("fixtures.json", json.dumps({
            "channels": [{"channel_url": "fixture-news", "kind": "feed", "name": "From a file"}],
            "templates": [{"key": "welcome", "name": "Welcome", "data": {"title": "Welcome"}}],
        }))
        self.field("fixtures-file").send_keys(good)
        self.submit("form[action='/console/templates/fixtures'] button")
        self.wait.until(lambda driver: "channel fixture-news: created" in driver.page_source)
        self.expect(self.driver.find_elements(By.LINK_TEXT, "welcome"), "the loaded template is listed")
        self.check_page("fixtures-loaded")
        # A file with a problem loads nothing and says where the problem is, as the CLI does.
        bad = self.write("bad.json", json.dumps({
            "channels": [{"channel_url": "never-made", "kind": "feed"}],
            "templates": [{"key": "broken", "data": {"title": "{{missing}}"}}],
        }))
        self.field("fixtures-file").send_keys(bad)
        self.submit("form[action='/console/templates/fixtures'] button")
        self.wait.until(expected_conditions.presence_of_element_located((By.ID, "fixtures-problem")))
        problem = self.field("fixtures-problem").text
        self.expect("$.templates[0]" in problem and "missing" in problem, "the problem's path: " + problem)
        self.check_page("fixtures-problem")
        self.open("/console/channels")
        self.expect(not self.driver.find_elements(By.LINK_TEXT, "never-made"), "nothing of the bad file was loaded")

    def users(self):
        self.driver.find_element(By.LINK_TEXT, "Users").click()
        self.wait_for_path("/console/users")
        self.check_page("users")
        self.fill("id", "alice")
        self.submit()
        self.wait_for_path("/console/users/alice")
        self.expect(len(self.driver.find_elements(By.CSS_SELECTOR, "#sessions + table tbody tr")) == 1, "alice's session is listed")
        self.expect("orders" in self.driver.find_element(By.CSS_SELECTOR, "#channels + table").text, "alice's channel")
        self.check_page("user")
        # Revoking her sessions: her token stops working at once.
        self.submit("form[action$='/sessions/revoke'] button")
        self.wait.until(lambda driver: "1 sessions revoked" in driver.page_source)
        try:
            self.api("GET", "/v1/me/unread", token=self.alice)
            self.expect(False, "a revoked session still reads")
        except urllib.error.HTTPError as error:
            self.expect(error.code == 401, "a revoked session gets 401, not %d" % error.code)
        self.submit("form[action$='/reset'] button")
        self.wait.until(lambda driver: "orders reset" in driver.page_source)
        self.check_page("user-revoked")
        # Erasing bob.
        self.open("/console/users/bob")
        self.fill("confirm", "bob")
        self.submit("form[action$='/erase'] button")
        self.wait_for_path("/console/users")
        self.expect("Erasing bob" in self.driver.find_element(By.CSS_SELECTOR, ".notice").text, "the erasure started")
        self.expect(self.api("GET", "/v1/users/bob/erasure")["user_id"] == "bob", "the API knows the erasure")

    def credentials(self):
        self.driver.find_element(By.LINK_TEXT, "Push").click()
        self.wait_for_path("/console/push")
        self.check_page("push")
        key = subprocess.run(
            "openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt",
            shell=True, check=True, capture_output=True,
        ).stdout
        # A file that is not a key is refused in the API's words.
        self.fill("credential-name", "production")
        self.field("credential-file").send_keys(self.write("not-a-key.p8", "hello"))
        self.fill("topic", "com.example.app")
        self.fill("key_id", "ABCDE12345")
        self.fill("team_id", "TEAM123456")
        self.submit("form[action='/console/push/credentials'] button")
        self.wait.until(expected_conditions.presence_of_element_located((By.ID, "credential-problem")))
        self.expect("key" in self.field("credential-problem").text, "the bad key's problem")
        self.check_page("push-problem")
        self.fill("credential-name", "production")
        self.field("credential-file").send_keys(self.write("AuthKey.p8", key))
        self.fill("topic", "com.example.app")
        self.fill("key_id", "ABCDE12345")
        self.fill("team_id", "TEAM123456")
        self.submit("form[action='/console/push/credentials'] button")
        self.wait.until(lambda driver: "Credential production saved" in driver.page_source)
        listed = self.api("GET", "/v1/apns/credentials")["credentials"]
        self.expect([c["name"] for c in listed] == ["production"] and listed[0]["key_id"] == "ABCDE12345", "stored: %r" % listed)
        self.expect("BEGIN PRIVATE KEY" not in self.driver.page_source, "the key is never shown")
        self.check_page("push-credential")
        self.submit("form[action='/console/push/credentials/production/delete'] button")
        self.wait.until(lambda driver: "Credential production deleted" in driver.page_source)
        self.expect(self.api("GET", "/v1/apns/credentials")["credentials"] == [], "the credential is gone")

    def refusals(self):
        # A form whose CSRF token was tampered with is refused, and changes nothing.
        self.open("/console/channels/browser-news")
        self.driver.execute_script("document.querySelector('main form input[name=csrf]').value = '0'.repeat(64)")
        self.fill("name", "Forged")
        self.submit()
        self.wait.until(lambda driver: "did not come from this console" in driver.page_source)
        self.check_page("refused")
        self.open("/console/channels/browser-news")
        self.expect(self.field("name").get_attribute("value") == "News from the browser", "the forged form changed nothing")
        # Without the cookie: the pages send you to sign in, the forms are refused.
        self.expect(self.raw("GET", "/console") == 303, "GET without the cookie redirects")
        self.expect(self.raw("POST", "/console/channels/new", {"csrf": "x", "url": "x", "kind": "feed"}) == 403, "POST without the cookie")
        self.expect(self.raw("GET", "/console", cookie=self.cookie) == 200, "the cookie works outside the browser too")

    def delete_channel(self):
        self.open("/console/channels/browser-news")
        self.driver.find_element(By.PARTIAL_LINK_TEXT, "Delete this channel").click()
        self.wait_for_path("/console/channels/browser-news/delete")
        self.expect(self.field("delete-notifications").text == "0", "nothing was sent to it")
        self.check_page("channel-delete")
        self.submit()
        self.wait_for_path("/console/channels")
        self.expect("Channel browser-news deleted" in self.driver.find_element(By.CSS_SELECTOR, ".notice").text, "the notice")
        self.expect(not self.driver.find_elements(By.LINK_TEXT, "browser-news"), "the channel is gone from the list")

    def sign_out(self):
        self.open("/console")
        self.submit(".sign-out button")
        self.wait_for_path("/console/sign-in")
        self.open("/console")
        self.wait_for_path("/console/sign-in")
        self.expect(self.raw("GET", "/console", cookie=self.cookie) == 303, "the old cookie no longer signs in")


# Labels, headings, language and names of images: the basics axe-core and Lighthouse check first.
ACCESSIBILITY_CHECKS = """
const problems = [];
if (!document.documentElement.lang) problems.push('html has no lang');
if (!document.title.trim()) problems.push('no title');
const h1 = document.querySelectorAll('h1');
if (h1.length !== 1) problems.push(h1.length + ' h1 elements');
let level = 0;
for (const heading of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
  const next = Number(heading.tagName[1]);
  if (next > level + 1) problems.push('heading ' + heading.tagName + ' "' + heading.textContent.trim() + '" skips a level');
  level = next;
}
for (const control of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
  const labelled = control.labels.length > 0 || control.getAttribute('aria-label') || control.getAttribute('aria-labelledby');
  if (!labelled) problems.push((control.id || control.name) + ' has no label');
}
for (const button of document.querySelectorAll('button, a[href]')) {
  if (!button.textContent.trim() && !button.getAttribute('aria-label')) problems.push('a ' + button.tagName + ' has no text');
}
for (const image of document.querySelectorAll('img, svg[role=img]')) {
  const named = image.getAttribute('alt') !== null || image.getAttribute('aria-label') || image.getAttribute('aria-labelledby');
  if (!named) problems.push('an image has no text alternative');
}
if (!document.querySelector('main')) problems.push('no main landmark');
return problems;
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--screenshots", required=True)
    arguments = parser.parse_args()
    os.makedirs(arguments.screenshots, exist_ok=True)
    walk = Walk(arguments.url, arguments.token, arguments.screenshots)
    try:
        for step in [walk.prepare, walk.sign_in, walk.overview, walk.channels, walk.templates, walk.send, walk.scheduled, walk.fixtures,
                     walk.users, walk.credentials, walk.refusals, walk.delete_channel, walk.sign_out]:
            step()
            print("ok", step.__name__, flush=True)
    except Exception as error:
        walk.driver.save_screenshot(os.path.join(arguments.screenshots, "failure.png"))
        print("FAILED:", error, file=sys.stderr, flush=True)
        return 1
    finally:
        walk.close()
    print("the console walk passed; screenshots in", arguments.screenshots, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
