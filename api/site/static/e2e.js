// pastebin: end-to-end encrypted pastes, in this browser (docs/encryption.md, format v1). The
// create form's switch encrypts the text, title, file name and language here with Web Crypto
// (AES-256-GCM under a fresh random key, a password mixed in with PBKDF2-SHA-256) and sends only
// the ciphertext; the key goes in the link's fragment, which browsers never send. The page of an
// encrypted paste fetches the ciphertext and decrypts it here. No code but this file and the
// browser's own touches a key. The Go implementation is the envelope package; tests prove that
// each opens the other's pastes.
"use strict";

(function () {
  const VERSION = 1, KEY_SIZE = 32, SALT_SIZE = 16, NONCE_SIZE = 12, TAG_SIZE = 16, META_PREFIX = 4;
  const MIN_ITER = 600000, MAX_ITER = 10000000, MAX_FORMAT = 100, MAX_META = 65536;
  const utf8 = new TextEncoder();

  function fail(name, message) {
    const e = new Error(message);
    e.name = name;
    return e;
  }

  // parseFormat reads a Paste-Encryption value as envelope.ParseFormat does.
  function parseFormat(value) {
    const bad = () => fail("FormatError", "This paste is encrypted in a format this page does not know.");
    if (typeof value !== "string" || value.length > MAX_FORMAT) throw bad();
    const trim = (s) => s.replace(/^[ \t]+|[ \t]+$/g, "");
    const parts = value.split(";");
    if (trim(parts[0]) !== "v1") throw bad();
    const params = new Map();
    for (const part of parts.slice(1)) {
      const p = trim(part), eq = p.indexOf("=");
      if (eq < 0 || eq === p.length - 1 || params.has(p.slice(0, eq))) throw bad();
      params.set(p.slice(0, eq), p.slice(eq + 1));
    }
    if (params.get("kdf") === "none" && params.size === 1) return { kdf: "none", iter: 0 };
    const iter = params.get("iter") || "";
    if (params.get("kdf") === "pbkdf2-sha256" && params.size === 2 && /^[1-9][0-9]{0,8}$/.test(iter) &&
        Number(iter) >= MIN_ITER && Number(iter) <= MAX_ITER) {
      return { kdf: "pbkdf2-sha256", iter: Number(iter) };
    }
    throw bad();
  }

  // canonical is the format's one spelling, which also authenticates the ciphertext.
  function canonical(f) {
    return f.kdf === "none" ? "v1; kdf=none" : "v1; kdf=pbkdf2-sha256; iter=" + f.iter;
  }

  function headerSize(f) { return 1 + (f.kdf === "none" ? 0 : SALT_SIZE) + NONCE_SIZE; }

  function encodeKey(bytes) {
    let s = "";
    for (const b of bytes) s += String.fromCharCode(b);
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function decodeKey(text) {
    let bytes = null;
    if (/^[A-Za-z0-9_-]{43}$/.test(text)) {
      const s = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=");
      bytes = Uint8Array.from(s, (c) => c.charCodeAt(0));
    }
    if (!bytes || bytes.length !== KEY_SIZE) {
      throw fail("KeyError", "This link has no key, or only part of it: an encrypted paste opens only with its whole link, # and all.");
    }
    return bytes;
  }

  function concat(...parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) { out.set(p, at); at += p.length; }
    return out;
  }

  // aesKey is the AES-GCM key of format f: the link's key, or PBKDF2 of it and the password.
  async function aesKey(f, key, password, salt, usage) {
    let raw = key;
    if (f.kdf === "pbkdf2-sha256") {
      if (!password) throw fail("PasswordError", "This paste needs its password.");
      const base = await crypto.subtle.importKey("raw", concat(key, utf8.encode(password.normalize("NFC"))),
        "PBKDF2", false, ["deriveBits"]);
      raw = new Uint8Array(await crypto.subtle.deriveBits(
        { name: "PBKDF2", hash: "SHA-256", salt, iterations: f.iter }, base, 256));
    }
    return crypto.subtle.importKey("raw", raw, "AES-GCM", false, [usage]);
  }

  // seal encrypts text (bytes) and its details ({title, filename, language}) under a new key, and
  // the password if one is given. It answers the body to upload, its format and the key for the link.
  async function seal(details, text, password) {
    const f = password ? { kdf: "pbkdf2-sha256", iter: MIN_ITER } : { kdf: "none", iter: 0 };
    const key = crypto.getRandomValues(new Uint8Array(KEY_SIZE));
    const head = new Uint8Array(headerSize(f));
    head[0] = VERSION;
    crypto.getRandomValues(head.subarray(1)); // the salt, if any, and the nonce
    const kept = {};
    for (const k of ["title", "filename", "language"]) if (details[k]) kept[k] = details[k];
    const meta = utf8.encode(JSON.stringify(kept));
    const prefix = new Uint8Array(META_PREFIX);
    new DataView(prefix.buffer).setUint32(0, meta.length);
    const k = await aesKey(f, key, password, head.subarray(1, 1 + SALT_SIZE), "encrypt");
    const sealed = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv: head.subarray(head.length - NONCE_SIZE), additionalData: utf8.encode(canonical(f)) },
      k, concat(prefix, meta, text));
    return { body: concat(head, new Uint8Array(sealed)), format: canonical(f), key: encodeKey(key) };
  }

  // open decrypts body (bytes) of format formatValue with the link's key and the password.
  async function open(body, formatValue, keyText, password) {
    const f = parseFormat(formatValue);
    const key = decodeKey(keyText);
    const hs = headerSize(f);
    if (body.length < hs + META_PREFIX + TAG_SIZE || body[0] !== VERSION) {
      throw fail("FormatError", "This paste is not an encrypted paste of a format this page knows.");
    }
    const k = await aesKey(f, key, password, body.subarray(1, 1 + SALT_SIZE), "decrypt");
    let plain;
    try {
      plain = new Uint8Array(await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: body.subarray(hs - NONCE_SIZE, hs), additionalData: utf8.encode(canonical(f)) },
        k, body.subarray(hs)));
    } catch (e) {
      throw fail("WrongKey", "Wrong key or password: this paste did not decrypt.");
    }
    const n = new DataView(plain.buffer, plain.byteOffset, plain.byteLength).getUint32(0);
    if (n > MAX_META || n > plain.length - META_PREFIX) throw fail("FormatError", "The paste's details are damaged.");
    const details = n ? JSON.parse(new TextDecoder().decode(plain.subarray(META_PREFIX, META_PREFIX + n))) : {};
    const text = (v) => (typeof v === "string" ? v : "");
    return { title: text(details.title), filename: text(details.filename), language: text(details.language),
      text: plain.subarray(META_PREFIX + n) };
  }

  // For the tests (api/e2e_browser_test.go), which seal and open through this very code.
  window.pastebinE2E = { seal, open };

  // webCrypto reports whether this page may use Web Crypto: only in a secure context (HTTPS, or
  // localhost), which browsers decide.
  function webCrypto() { return window.isSecureContext && window.crypto && crypto.subtle; }

  function startPage() {
    setUpEncryptSwitch();
    setUpEncryptedPaste();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", startPage);
  } else {
    startPage();
  }

  // The create form: with the switch on, the form is sealed and posted here instead of by the
  // browser, and the page goes to the paste's link with its key after #.
  function setUpEncryptSwitch() {
    const form = document.getElementById("create");
    const toggle = document.getElementById("encrypt");
    if (!form || !toggle) return;
    const passwordField = document.getElementById("e2e-password-field");
    if (!webCrypto()) {
      toggle.checked = false;
      toggle.disabled = true;
      document.getElementById("encrypt-help").textContent =
        "(needs HTTPS: browsers offer encryption only to pages served over HTTPS, or from localhost)";
      return;
    }
    const sync = () => { passwordField.hidden = !toggle.checked; };
    toggle.addEventListener("change", sync);
    sync();
    // In the capture phase on the document, so it runs before app.js's own submit handler.
    document.addEventListener("submit", (ev) => {
      if (ev.target !== form || !toggle.checked) return;
      ev.preventDefault();
      ev.stopImmediatePropagation();
      createEncrypted(form);
    }, true);
  }

  async function createEncrypted(form) {
    const button = form.querySelector("button[type=submit]");
    const label = button.textContent;
    button.disabled = true;
    button.textContent = "Encrypting…";
    try {
      const text = await textToSeal(form);
      if (text.length === 0) throw fail("FormError", "Write or paste some text, or choose a file.");
      const field = (name) => form.elements.namedItem(name);
      const details = { title: field("title").value.trim(), filename: field("filename").value.trim(), language: field("language").value };
      const sealed = await seal(details, text, document.getElementById("encrypt-password").value);
      button.textContent = "Creating…";
      const created = await post(form, sealed);
      // The paste page shows the token once from this cookie, as after the form's own create.
      document.cookie = "paste_token=" + created.delete_token + "; path=/" + created.code + "; max-age=300; samesite=strict" +
        (location.protocol === "https:" ? "; secure" : "");
      location.assign("/" + created.code + "#" + sealed.key);
    } catch (e) {
      showFormError(form, e.name === "FormError" || e.name === "ServerError" ? e.message
        : "The paste could not be encrypted or sent: " + e.message);
      button.disabled = false;
      button.textContent = label;
    }
  }

  // textToSeal is the text area's text, or the chosen file's bytes when app.js did not put the
  // file in the text area (too large, or not UTF-8 text).
  async function textToSeal(form) {
    const input = form.elements.namedItem("file");
    const file = input.files && input.files[0];
    if (file && input.dataset.inTextArea !== "true") return new Uint8Array(await file.arrayBuffer());
    return utf8.encode(form.elements.namedItem("content").value);
  }

  // post creates the paste: the envelope as the body, and beside it only what the server must know.
  async function post(form, sealed) {
    const field = (name) => form.elements.namedItem(name);
    const headers = { "Content-Type": "application/octet-stream", Accept: "application/json", "Paste-Encryption": sealed.format };
    if (field("expires_in").value) headers["Paste-Expires-In"] = field("expires_in").value;
    if (field("burn").checked) headers["Paste-Burn-After-Reading"] = "true";
    if (field("max_views").value) headers["Paste-Max-Views"] = field("max_views").value;
    // A creator key typed into the form; one the browser keeps goes in its cookie.
    if (field("creator_key") && field("creator_key").value) headers.Authorization = "Bearer " + field("creator_key").value.trim();
    let resp;
    try {
      resp = await fetch("/", { method: "POST", body: sealed.body, headers, credentials: "same-origin", cache: "no-store" });
    } catch (e) {
      throw fail("ServerError", "Could not reach the server. Try again.");
    }
    if (resp.status === 201) return resp.json();
    let detail = "The server answered " + resp.status + ".";
    try { detail = (await resp.json()).detail || detail; } catch (e) { /* not problem details */ }
    throw fail("ServerError", detail);
  }

  function showFormError(form, message) {
    let el = document.getElementById("form-error");
    if (!el) {
      el = document.createElement("p");
      el.className = "alert error";
      el.id = "form-error";
      el.setAttribute("role", "alert");
      form.prepend(el);
    }
    el.textContent = message;
    el.scrollIntoView({ block: "nearest" });
  }

  // The page of an encrypted paste: fetch (or, for a paste with a view limit, take) the
  // ciphertext, decrypt it with the key after # and the password if it has one, and show it.
  function setUpEncryptedPaste() {
    const box = document.getElementById("e2e");
    if (!box) return;
    const ui = pasteUI(box);
    if (!webCrypto()) return ui.status("This paste is encrypted, and this browser offers encryption only to pages served over HTTPS (or from localhost).");
    let format, key;
    try {
      format = parseFormat(box.dataset.encryption);
      key = location.hash.slice(1);
      decodeKey(key);
    } catch (e) {
      return ui.status(e.message);
    }
    const state = { body: null, format, key, box, ui };
    if (box.dataset.take === "true") {
      ui.take.hidden = false;
      ui.takeButton.addEventListener("click", () => start(state));
      return ui.status("");
    }
    start(state);
  }

  function pasteUI(box) {
    const $ = (id) => document.getElementById(id);
    return {
      statusEl: $("e2e-status"), take: $("e2e-take"), takeButton: $("e2e-open"), passwordForm: $("e2e-password-form"),
      password: $("e2e-password"),
      status(message) { this.statusEl.textContent = message; this.statusEl.hidden = !message; },
    };
  }

  // start asks for the password first, when the paste has one, then fetches and decrypts.
  function start(state) {
    const { ui } = state;
    if (ui.take) ui.take.hidden = true;
    if (parseFormat(state.box.dataset.encryption).kdf === "none") return decrypt(state, "");
    ui.passwordForm.hidden = false;
    ui.password.focus();
    ui.passwordForm.addEventListener("submit", (ev) => {
      ev.preventDefault();
      decrypt(state, ui.password.value);
    });
  }

  async function decrypt(state, password) {
    const { ui, box } = state;
    ui.status("Decrypting…");
    try {
      if (!state.body) state.body = await fetchCiphertext(state);
      const paste = await open(state.body, box.dataset.encryption, state.key, password);
      ui.passwordForm.hidden = true;
      ui.status("");
      show(box, paste, state.viewsLeft);
    } catch (e) {
      ui.status(e.message);
      if (e.name === "WrongKey" && !ui.passwordForm.hidden) ui.password.select();
    }
  }

  // fetchCiphertext reads the raw bytes: a POST takes a view of a paste with a view limit.
  async function fetchCiphertext(state) {
    const take = state.box.dataset.take === "true";
    const resp = await fetch("/raw/" + encodeURIComponent(state.box.dataset.code),
      { method: take ? "POST" : "GET", credentials: "omit", cache: "no-store" });
    if (resp.status !== 200) {
      throw fail("ServerError", resp.status === 410 ? "This paste is gone: it expired, was deleted, or its last view was taken."
        : "The paste could not be fetched (" + resp.status + "). Reload the page to try again.");
    }
    if (take) state.viewsLeft = Number(resp.headers.get("Paste-Views-Left") || "0");
    return new Uint8Array(await resp.arrayBuffer());
  }

  // show puts the decrypted paste on the page: its title, plain text with line numbers, and
  // buttons that copy and download it. Nothing is highlighted: the server could not, and the
  // page stays as plain as the server would show it.
  function show(box, paste, viewsLeft) {
    const code = box.dataset.code;
    const title = paste.title || paste.filename || "Paste " + code;
    document.getElementById("paste-title").textContent = title;
    document.title = title + " · pastebin";
    const text = asText(paste.text);
    // The link to share is this page's, key and all: the server only knows it without the key.
    document.getElementById("link").value = location.href;
    const language = document.getElementById("e2e-language");
    language.textContent = paste.language;
    language.hidden = !paste.language;
    if (text === null) {
      box.querySelector("#e2e-status").textContent = "This paste is not text. Download it to see it.";
      box.querySelector("#e2e-status").hidden = false;
    } else {
      const rows = text.split(/(?<=\n)/).filter((row) => row !== "");
      const pre = document.getElementById("code");
      pre.querySelector("code").replaceChildren(lines(rows));
      pre.hidden = false;
      const count = document.getElementById("e2e-lines");
      count.textContent = rows.length + (rows.length === 1 ? " line" : " lines");
      count.hidden = false;
    }
    const tag = document.getElementById("views-left");
    if (tag && viewsLeft !== undefined) {
      const max = Number(tag.dataset.max);
      tag.textContent = viewsLeft + " of " + max + (max === 1 ? " view" : " views") + " left";
    }
    if (viewsLeft === 0) {
      if (tag) tag.hidden = true;
      const gone = document.getElementById("e2e-gone");
      gone.hidden = false;
      gone.dataset.gone = code;
    }
    setUpDownload(paste, code, text !== null);
  }

  // asText is the paste as text, or null for what the server's pages would not show as text
  // either: bytes that are not UTF-8, or hold a NUL.
  function asText(bytes) {
    if (bytes.includes(0)) return null;
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch (e) {
      return null;
    }
  }

  // lines builds the text as the server's pages draw code: a row per line (its line break kept, so
  // the text copies as it is), its number drawn by CSS from data-n (never copied). The numbers are
  // not links here: #L12 would replace the key in the address.
  function lines(rows) {
    const frag = document.createDocumentFragment();
    rows.forEach((row, i) => {
      const line = document.createElement("span");
      line.className = "line";
      const n = document.createElement("span");
      n.className = "ln";
      n.dataset.n = String(i + 1);
      n.setAttribute("aria-hidden", "true");
      const cl = document.createElement("span");
      cl.className = "cl";
      cl.textContent = row;
      line.append(n, cl);
      frag.append(line);
    });
    return frag;
  }

  function setUpDownload(paste, code, isText) {
    const download = document.getElementById("e2e-download");
    const blob = new Blob([paste.text], { type: "application/octet-stream" });
    download.href = URL.createObjectURL(blob);
    download.download = paste.filename || code + ".txt";
    download.hidden = false;
    document.getElementById("e2e-copy").hidden = !isText;
  }
})();
