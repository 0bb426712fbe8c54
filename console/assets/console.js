// Progressive enhancement only: every page works without this file.
"use strict";

// A form sent twice by an impatient second click would create or delete twice: disable its buttons
// once it is on its way.
document.addEventListener("submit", (event) => {
  for (const button of event.target.querySelectorAll("button[type=submit]")) {
    button.disabled = true;
  }
});
