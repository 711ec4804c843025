// pastebin: comfort on top of pages that work without it. Copy buttons, the delete token kept in
// this browser, keyboard shortcuts, and relative times that stay current. Served from the binary
// under a Content-Security-Policy that allows no inline script, so everything is wired up here.
"use strict";

(function () {
  document.documentElement.classList.add("js");

  // The delete tokens this browser keeps: the one place that reads or writes them. Each is one
  // localStorage entry, "pastebin:token:<code>" → {token, expires, saved}: the token, the paste's
  // expiry (null: never), and when it was saved (ms since the epoch). An entry goes when its paste
  // expires, when a page says the paste is gone (burned, deleted, taken down: 404, 410, 451), and,
  // for a paste that never expires, keepNeverExpiring after it was saved.
  const tokens = {
    prefix: "pastebin:token:",
    keepNeverExpiring: 90 * 864e5, // 90 days

    save(code, token, expires) {
      try {
        localStorage.setItem(this.prefix + code, JSON.stringify({ token, expires: expires || null, saved: Date.now() }));
      } catch (e) {
        // Storage may be full or disabled; the token was shown, which is what matters.
      }
    },

    // entry is the kept entry of code, or null.
    entry(code) {
      try {
        const v = JSON.parse(localStorage.getItem(this.prefix + code) || "null");
        return v && typeof v.token === "string" ? v : null;
      } catch (e) {
        return null;
      }
    },

    get(code) {
      const v = this.entry(code);
      return v ? v.token : "";
    },

    forget(code) {
      try { localStorage.removeItem(this.prefix + code); } catch (e) { /* nothing to forget */ }
    },

    // list is every kept entry, with its code.
    list() {
      const out = [];
      try {
        for (let i = 0; i < localStorage.length; i++) {
          const k = localStorage.key(i);
          if (!k || !k.startsWith(this.prefix)) continue;
          const v = this.entry(k.slice(this.prefix.length));
          if (v) out.push({ code: k.slice(this.prefix.length), ...v });
        }
      } catch (e) { /* storage disabled: nothing kept */ }
      return out;
    },

    // prune forgets the entries past their paste's expiry, or past keepNeverExpiring for pastes
    // that never expire. An entry kept before entries had a saved time is counted from now.
    prune() {
      const now = Date.now();
      for (const v of this.list()) {
        if (v.expires) {
          if (Date.parse(v.expires) < now) this.forget(v.code);
        } else if (typeof v.saved !== "number") {
          try {
            localStorage.setItem(this.prefix + v.code, JSON.stringify({ token: v.token, expires: null, saved: now }));
          } catch (e) { /* best effort */ }
        } else if (v.saved + this.keepNeverExpiring < now) {
          this.forget(v.code);
        }
      }
    },
  };

  // A page that says a paste is gone (an error page for it, or the page of a paste just burned)
  // names it in data-gone: its token deletes nothing any more.
  function forgetGonePastes() {
    for (const el of document.querySelectorAll("[data-gone]")) tokens.forget(el.dataset.gone);
  }

  // Copy buttons: data-copy names the element whose value or text is copied.
  async function copyText(text, fallbackEl) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (e) {
      if (fallbackEl && typeof fallbackEl.select === "function") {
        fallbackEl.select();
        return document.execCommand("copy");
      }
      return false;
    }
  }

  // Tells screen readers what just happened, through the page's one live region.
  function announce(message) {
    const region = document.getElementById("announce");
    if (!region) return;
    region.textContent = "";
    setTimeout(() => { region.textContent = message; }, 50);
  }

  function setUpCopyButtons() {
    for (const button of document.querySelectorAll("button[data-copy]")) {
      const label = button.textContent;
      button.addEventListener("click", async () => {
        const el = document.querySelector(button.dataset.copy);
        if (!el) return;
        const text = "value" in el ? el.value : el.textContent;
        const ok = await copyText(text, "select" in el ? el : null);
        announce(ok ? "Copied to the clipboard." : "Copying failed; select the text and copy it yourself.");
        button.textContent = ok ? "Copied" : "Copy failed";
        button.classList.toggle("copied", ok);
        setTimeout(() => { button.textContent = label; button.classList.remove("copied"); }, 2000);
      });
    }
  }

  // The create form: Tab types a tab, Esc then Tab leaves the text area (no keyboard trap),
  // Ctrl+Enter or Cmd+Enter creates, and a text file chosen fills the text area.
  function setUpCreateForm() {
    const form = document.getElementById("create");
    if (!form) return;
    const area = form.querySelector("#content");
    setUpTabKey(area);
    form.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        form.requestSubmit();
      }
    });
    setUpFilePicker(form, area);
  }

  function setUpTabKey(area) {
    let tabLeaves = false;
    area.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") { tabLeaves = true; return; }
      if (ev.key !== "Tab" || ev.shiftKey || ev.ctrlKey || ev.altKey || ev.metaKey || tabLeaves) {
        tabLeaves = false;
        return;
      }
      ev.preventDefault();
      if (!document.execCommand("insertText", false, "\t")) { // keeps undo where supported
        area.setRangeText("\t", area.selectionStart, area.selectionEnd, "end");
      }
    });
    area.addEventListener("blur", () => { tabLeaves = false; });
  }

  // A text file goes into the text area, where it can be edited, and is sent from there, named
  // after the file. Anything else (too big, not UTF-8 text) is uploaded as it is.
  function setUpFilePicker(form, area) {
    const file = form.querySelector("#file");
    const filename = form.querySelector("#filename");
    const button = form.querySelector("button[type=submit]");
    let fileLoaded = false;
    file.addEventListener("change", async () => {
      fileLoaded = false;
      file.dataset.inTextArea = "false"; // e2e.js seals the file itself unless it is in the text area
      const f = file.files && file.files[0];
      if (!f) return;
      filename.value = f.name;
      if (f.size > 2 * 1024 * 1024) return;
      try {
        const bytes = new Uint8Array(await f.arrayBuffer());
        if (bytes.includes(0)) return;
        area.value = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
        fileLoaded = true;
        file.dataset.inTextArea = "true";
      } catch (e) {
        // Not UTF-8: the file itself is uploaded.
      }
    });
    form.addEventListener("submit", () => {
      if (fileLoaded) file.disabled = true; // sent from the text area, not twice
      setTimeout(() => { button.disabled = true; button.textContent = "Creating…"; }, 0);
    });
    // Coming back with the back button must give a usable form again.
    window.addEventListener("pageshow", () => {
      file.disabled = false;
      button.disabled = false;
      button.textContent = "Create paste";
    });
  }

  // The paste page: keep the token shown once, and delete with it.
  function setUpPaste() {
    const box = document.getElementById("token-box");
    if (box) tokens.save(box.dataset.code, document.getElementById("token").value, box.dataset.expires);
    const form = document.getElementById("delete-form");
    if (!form) return;
    const details = form.closest("details");
    details.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && details.open) {
        details.open = false;
        details.querySelector("summary").focus();
      }
    });
    setUpDelete(form);
  }

  // Delete through the API, with the token as a bearer header: no other site can make this browser
  // send it, and the token never travels as a form field. Without a kept token, the typed one.
  function setUpDelete(form) {
    const code = form.dataset.code;
    const input = form.querySelector("#delete-token");
    const status = form.querySelector(".form-status");
    let token = "";
    const useStored = (t) => {
      token = t;
      form.querySelector(".has-token").hidden = !t;
      input.closest(".field").hidden = !!t;
      input.required = !t;
    };
    useStored(tokens.get(code));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      status.textContent = "";
      let resp;
      try {
        resp = await fetch("/api/v1/pastes/" + encodeURIComponent(code), {
          method: "DELETE", headers: { Authorization: "Bearer " + (token || input.value.trim()) },
          credentials: "omit", cache: "no-store",
        });
      } catch (e) {
        status.textContent = "Could not reach the server. Try again.";
        return;
      }
      if (resp.status === 204 || resp.status === 404 || resp.status === 410 || resp.status === 451) {
        tokens.forget(code);
        location.replace("/" + code);
        return;
      }
      const refused = resp.status === 403 || resp.status === 401;
      status.textContent = refused ? "That is not this paste's delete token."
        : "The paste could not be deleted (" + resp.status + "). Try again.";
      if (refused && token) {
        tokens.forget(code);
        useStored("");
      }
    });
  }

  // Relative times ("in 3 hours") stay true while the page is open.
  function relative(ms) {
    if (ms <= 0) return "now";
    if (ms < 6e4) return "in less than a minute";
    ms = Math.round(ms / 6e4) * 6e4; // as the server words it: a day from now is "in 1 day" a second later
    const units = [["day", 864e5], ["hour", 36e5], ["minute", 6e4]];
    for (const [name, size] of units) {
      if (ms >= size) {
        const n = Math.floor(ms / size);
        return "in " + n + " " + name + (n === 1 ? "" : "s");
      }
    }
    return "in less than a minute";
  }

  function updateTimes() {
    for (const el of document.querySelectorAll("time[data-relative]")) {
      const left = Date.parse(el.dateTime) - Date.now();
      el.textContent = left > 0 ? relative(left) : "now (it has expired)";
    }
  }

  // What the pages' own scripts (mine.js) share with this one: the one store of delete tokens, how a
  // time to come is worded, and the live region.
  window.pastebin = Object.freeze({ tokens, relative, announce });

  function start() {
    tokens.prune();
    forgetGonePastes();
    setUpCopyButtons();
    setUpCreateForm();
    setUpPaste();
    updateTimes();
    setInterval(updateTimes, 30000);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
