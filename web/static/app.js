// Vigil's pages work without this script; it only enhances them:
//  - refreshes <main> in place from the same URL with ?fragment=1, keeping
//    scroll positions, open <details> and any control the viewer is using;
//  - shows <time datetime> values in the viewer's time zone, keeping the
//    absolute UTC value in the title;
//  - counts lease times down between refreshes.
(() => {
  "use strict";
  const main = document.getElementById("content");
  if (!main) return;

  // Compact text (the year only when it is not this one); the title holds
  // the full local time with its zone and the absolute UTC value.
  const short = new Intl.DateTimeFormat(undefined, {
    month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23",
  });
  const withYear = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23",
  });
  const full = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "long" });
  const thisYear = new Date().getFullYear();
  const local = { format: (d) => (d.getFullYear() === thisYear ? short : withYear).format(d) };
  const utc = (d) => d.toISOString().replace(".000Z", "Z");

  function localiseTimes(root) {
    for (const el of root.querySelectorAll("time[datetime]")) {
      const d = new Date(el.getAttribute("datetime"));
      if (Number.isNaN(d.getTime())) continue;
      el.textContent = local.format(d);
      el.title = full.format(d) + " · " + utc(d);
    }
  }

  // Result marks' titles start with their slot time in UTC; they are
  // localised on first hover, which is cheaper than rewriting thousands.
  const utcPrefix = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) UTC/;
  main.addEventListener("mouseover", (ev) => {
    const li = ev.target.closest && ev.target.closest(".strip li");
    if (!li || li.dataset.loc) return;
    li.dataset.loc = "1";
    const m = utcPrefix.exec(li.title);
    if (!m) return;
    const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
    li.title = local.format(d) + li.title.slice(m[0].length) + " (" + utc(d) + ")";
  });

  function span(ms) {
    const s = Math.round(Math.abs(ms) / 1000);
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
    return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
  }

  // data-countdown is the milliseconds left when the content was rendered,
  // on the database clock: counting from our own load time keeps a viewer's
  // clock skew out of it.
  let renderedAt = performance.now();
  function tickCountdowns() {
    const elapsed = performance.now() - renderedAt;
    for (const el of main.querySelectorAll("[data-countdown]")) {
      const left = Number(el.dataset.countdown) - elapsed;
      el.textContent = left > 0 ? span(left) : "lapsed " + span(left) + " ago";
    }
  }

  localiseTimes(document);
  tickCountdowns();
  setInterval(tickCountdowns, 1000);

  const period = Number(main.dataset.refresh || 0) * 1000;
  if (!period) return;

  // A pause switch and a status line in the header.
  const bar = document.createElement("div");
  bar.className = "refresh";
  const toggle = document.createElement("button");
  toggle.type = "button";
  toggle.setAttribute("aria-pressed", "false");
  toggle.dataset.testid = "refresh-toggle";
  toggle.textContent = "Pause updates";
  const state = document.createElement("span");
  state.setAttribute("role", "status");
  state.dataset.testid = "refresh-state";
  bar.append(toggle, state);
  (document.querySelector(".top") || document.body).append(bar);

  let paused = false;
  let timer = 0;
  let cost = 0;
  toggle.addEventListener("click", () => {
    paused = !paused;
    toggle.setAttribute("aria-pressed", String(paused));
    toggle.textContent = paused ? "Resume updates" : "Pause updates";
    state.textContent = paused ? "Updates paused" : "";
    if (!paused) refresh();
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && !paused) refresh();
  });

  function schedule() {
    clearTimeout(timer);
    // A slow page (a very large installation) is polled less often.
    timer = setTimeout(refresh, Math.max(period, cost * 10));
  }

  function busy() {
    const a = document.activeElement;
    if (a && a !== main && main.contains(a) && a.matches("input, select, textarea")) return true;
    const sel = window.getSelection();
    return sel && !sel.isCollapsed && main.contains(sel.anchorNode);
  }

  async function refresh() {
    clearTimeout(timer);
    if (paused || document.hidden || busy()) return schedule();
    const url = new URL(window.location.href);
    url.searchParams.set("fragment", "1");
    const started = performance.now();
    try {
      const res = await fetch(url, { headers: { Accept: "text/html" }, cache: "no-store" });
      if (!res.ok) throw new Error("HTTP " + res.status);
      const html = await res.text();
      if (busy()) return schedule();
      swap(html);
      state.textContent = "";
    } catch (err) {
      state.textContent = "Update failed (" + err.message + "); retrying";
    }
    cost = performance.now() - started;
    schedule();
  }

  function swap(html) {
    const x = window.scrollX, y = window.scrollY;
    const scrolls = [...main.querySelectorAll(".scroll")].map((el) => el.scrollLeft);
    const open = [...main.querySelectorAll("details")].map((el) => el.open);
    main.innerHTML = html;
    main.querySelectorAll(".scroll").forEach((el, i) => { if (scrolls[i]) el.scrollLeft = scrolls[i]; });
    main.querySelectorAll("details").forEach((el, i) => { if (open[i]) el.open = true; });
    window.scrollTo(x, y);
    renderedAt = performance.now();
    localiseTimes(main);
    tickCountdowns();
  }

  schedule();
})();
