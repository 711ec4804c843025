// pastebin console: a run's page follows the run while it goes. The page works without this
// script (it reloads itself while the run goes); with it, only the counters change, once a second.
"use strict";

(function () {
  function announce(message) {
    const region = document.getElementById("announce");
    if (region) region.textContent = message;
  }

  function duration(seconds) {
    if (seconds < 60) return (Math.round(seconds * 10) / 10) + "s";
    const m = Math.floor(seconds / 60);
    return m + "m" + (Math.round((seconds - 60 * m) * 10) / 10) + "s";
  }

  function rate(n, seconds) {
    return seconds > 0 ? Math.round(n / seconds) + " pastes/s" : "–";
  }

  // pacing says how the drain is paced, as store.RunPacing.String does (toFixed rounds an exact
  // tie up where Go's %.2f rounds it to even: only a budget such as 1.125 would show it).
  function pacing(p) {
    if (!p) return undefined;
    if (p.rate_limit === null) return p.mode + ", no limit";
    let s = p.mode + ", " + Math.round(p.rate_limit) + " pastes/s";
    if (p.reason) s += ": " + p.reason.replaceAll("_", " ");
    if (p.source && p.signal > 0) {
      const what = p.source === "database" ? "finishing latency" : "users' p99";
      s += ", " + what + " " + p.signal.toFixed(2) + "× before";
      if (p.aim > 0) s += " (aim " + p.aim.toFixed(2) + "×)";
    }
    return s;
  }

  // show writes a run's report into the page's data-field elements.
  function show(section, run) {
    const values = Object.assign({}, run, {
      duration: duration(run.duration_seconds),
      rate: rate(run.tombstoned, run.duration_seconds),
      pacing: pacing(run.pacing),
    });
    for (const el of section.querySelectorAll("[data-field]")) {
      const v = values[el.dataset.field];
      if (v === undefined || v === null) continue;
      el.textContent = String(v);
      if (el.dataset.field === "status") el.className = "badge badge-" + v;
      if (el.dataset.field === "last_error") el.hidden = v === "";
    }
  }

  async function follow(section) {
    const url = section.dataset.live;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      let run;
      try {
        const resp = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" });
        if (resp.status === 401) { location.reload(); return; }
        if (!resp.ok) continue;
        run = await resp.json();
      } catch (e) {
        continue; // the server is restarting, or the network hiccuped: try again
      }
      show(section, run);
      if (run.status !== "running") {
        section.removeAttribute("data-live");
        const note = document.getElementById("live-note");
        if (note) note.textContent = "This run is over.";
        announce("Run " + run.id + " " + run.status + ".");
        return;
      }
    }
  }

  function start() {
    const section = document.querySelector("#run[data-live]");
    if (section) follow(section);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
