// pastebin: the "My pastes" page (/mine). The pastes this browser created are the delete tokens that
// app.js keeps (window.pastebin.tokens, the one place that reads or writes them). This page asks the
// metadata API about each, lists those that live, forgets those that are gone (404, 410, 451), and
// deletes any with one click. Nothing about the list is stored on the server.
"use strict";

(function () {
  const { tokens, relative, announce } = window.pastebin;
  const lookUpsAtOnce = 4;
  const validCode = /^[0-9A-Za-z]{11}$/; // a paste's code (store.ValidShortCode): a link to it stays on this site

  function plural(n, unit) {
    return n + " " + unit + (n === 1 ? "" : "s");
  }

  // As the pages word a size (api/site/human.go): "812 bytes", "14.2 KiB".
  function humanBytes(n) {
    const oneDecimal = (f) => f.toFixed(1).replace(/\.0$/, "");
    if (n < 1024) return plural(n, "byte");
    if (n < 1024 * 1024) return oneDecimal(n / 1024) + " KiB";
    return oneDecimal(n / (1024 * 1024)) + " MiB";
  }

  // lookUp asks the metadata API about code, which never takes a view: {meta} for a live paste,
  // {gone: true} for one that is not there any more, {status} when the answer says neither.
  async function lookUp(code) {
    let resp;
    try {
      resp = await fetch("/api/v1/pastes/" + encodeURIComponent(code), { credentials: "omit", cache: "no-store" });
    } catch (e) {
      return { status: 0 };
    }
    if (resp.status === 404 || resp.status === 410 || resp.status === 451) return { gone: true };
    if (!resp.ok) return { status: resp.status };
    try {
      return { meta: await resp.json() };
    } catch (e) {
      return { status: resp.status };
    }
  }

  function span(parent, text, className) {
    const el = document.createElement("span");
    el.textContent = text;
    if (className) el.className = className;
    parent.appendChild(el);
    return el;
  }

  function expirySpan(meta, parent) {
    if (!meta.expires_at) {
      span(parent, "never expires");
      return;
    }
    const el = span(parent, "expires ");
    const time = document.createElement("time");
    time.dateTime = meta.expires_at;
    time.title = new Date(meta.expires_at).toLocaleString();
    time.dataset.relative = "";
    time.textContent = relative(Date.parse(meta.expires_at) - Date.now());
    el.appendChild(time);
  }

  // views is what the metadata says of a view limit, worded as the paste's page words it: a paste
  // that burns after reading (a limit of one view) says so, any other limit what is left of it.
  function views(meta) {
    if (meta.burn_after_read) return "burns after reading";
    if (typeof meta.views_left === "number") return meta.views_left + " of " + plural(meta.max_views, "view") + " left";
    return "";
  }

  // row is the list item of one paste; its text is set as text, never as markup.
  function row(code, meta) {
    const li = document.getElementById("mine-row").content.firstElementChild.cloneNode(true);
    li.dataset.code = code;
    const link = li.querySelector(".mine-title");
    link.href = "/" + code;
    link.textContent = meta ? meta.title || meta.filename || "Paste " + code : "Paste " + code;
    const line = li.querySelector(".meta");
    if (!meta) {
      span(line, "could not be looked up now");
    } else {
      if (meta.language) span(line, meta.language);
      span(line, humanBytes(meta.size));
      expirySpan(meta, line);
      if (views(meta)) span(line, views(meta), meta.burn_after_read ? "burn-tag" : "");
      if (meta.encryption) span(line, "encrypted"); // its title is inside the ciphertext, its key in the link alone
    }
    li.querySelector(".mine-delete").addEventListener("click", () => remove(li, code, link.textContent));
    li.querySelector(".mine-delete").setAttribute("aria-label", "Delete " + link.textContent);
    return li;
  }

  // remove deletes the paste with the kept token, as the paste page's form does, in one click.
  async function remove(li, code, name) {
    const button = li.querySelector(".mine-delete");
    button.disabled = true;
    let resp;
    try {
      resp = await fetch("/api/v1/pastes/" + encodeURIComponent(code), {
        method: "DELETE", headers: { Authorization: "Bearer " + tokens.get(code) }, credentials: "omit", cache: "no-store",
      });
    } catch (e) {
      button.disabled = false;
      say("Could not reach the server to delete “" + name + "”. Try again.");
      return;
    }
    if (resp.status === 204 || resp.status === 404 || resp.status === 410 || resp.status === 451) {
      tokens.forget(code);
      li.remove();
      say("Deleted “" + name + "”.");
      return;
    }
    if (resp.status === 401 || resp.status === 403) {
      tokens.forget(code); // it deletes nothing: the paste's own page asks for the right one
      li.remove();
      say("This browser's token for “" + name + "” was not its delete token; it is forgotten. Delete it from its page with the token you were given.");
      return;
    }
    button.disabled = false;
    say("“" + name + "” could not be deleted (" + resp.status + "). Try again.");
  }

  function say(message) {
    document.getElementById("mine-status").textContent = message;
    announce(message);
  }

  // lookUpAll asks about every entry, a few at a time, and answers them in the entries' order.
  async function lookUpAll(entries) {
    const answers = new Array(entries.length);
    let next = 0;
    const worker = async () => {
      while (next < entries.length) {
        const i = next++;
        answers[i] = await lookUp(entries[i].code);
      }
    };
    await Promise.all(Array.from({ length: lookUpsAtOnce }, worker));
    return answers;
  }

  async function start() {
    const list = document.getElementById("mine-list");
    const entries = [];
    for (const entry of tokens.list()) {
      if (validCode.test(entry.code)) entries.push(entry);
      else tokens.forget(entry.code); // no paste has such a code: nothing to list or delete
    }
    entries.sort((a, b) => (b.saved || 0) - (a.saved || 0)); // the newest first
    const answers = await lookUpAll(entries);
    let gone = 0;
    entries.forEach((entry, i) => {
      if (answers[i].gone) {
        tokens.forget(entry.code);
        gone++;
        return;
      }
      list.appendChild(row(entry.code, answers[i].meta));
    });
    const shown = list.children.length;
    let message = shown ? plural(shown, "paste") + " created in this browser." : "No pastes yet: the ones you create in this browser appear here.";
    if (gone) message += " " + plural(gone, "paste") + " that " + (gone === 1 ? "is" : "are") + " gone now " + (gone === 1 ? "was" : "were") + " forgotten.";
    document.getElementById("mine-status").textContent = message;
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
