// Progressive enhancement only: every page works without this file (forms post, previews and the
// curl command render on the server); with it, previews and the curl command follow the typing and
// a notification's funnel updates itself.
"use strict";

// A form sent twice by an impatient second click would create or delete twice: disable its buttons
// once it is on its way.
document.addEventListener("submit", (event) => {
  for (const button of event.target.querySelectorAll("button[type=submit]")) {
    button.disabled = true;
  }
});

// Fetches `url` and hands its text to `apply`; a failed fetch leaves the page as it was.
async function fetchText(url, apply) {
  try {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
    if (response.ok) apply(await response.text());
  } catch (error) {
    // Offline or signed out: the server-rendered content stays.
  }
}

// Calls `action` a moment after the last of a burst of input events.
function debounced(action, delay) {
  let timer;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(action, delay);
  };
}

// The fields of a form as a query string (without the CSRF token, which never goes in a URL).
function query(form) {
  const fields = new URLSearchParams(new FormData(form));
  fields.delete("csrf");
  return fields.toString();
}

// A template's preview, rendered by the server as the sample variables change.
const previewForm = document.getElementById("preview-form");
if (previewForm) {
  const target = document.getElementById("preview");
  previewForm.addEventListener(
    "input",
    debounced(() => fetchText(previewForm.dataset.preview + "?" + query(previewForm), (html) => (target.innerHTML = html)), 200)
  );
}

// The send form's request as curl, following the form.
const sendForm = document.getElementById("send-form");
if (sendForm) {
  const target = document.getElementById("curl");
  const update = debounced(() => fetchText(sendForm.dataset.curl + "?" + query(sendForm), (text) => (target.textContent = text)), 200);
  sendForm.addEventListener("input", update);
  sendForm.addEventListener("change", update);
}

// A notification's fan-out and funnel, polled while the page is visible.
const funnel = document.querySelector("[data-refresh]");
if (funnel) {
  setInterval(() => {
    if (document.visibilityState === "visible") fetchText(funnel.dataset.refresh, (html) => (funnel.innerHTML = html));
  }, 2000);
}
