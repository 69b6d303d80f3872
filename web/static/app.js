// app.js drives the live-demo page: presets, the task box, the step stream over Server-Sent
// Events, the live view and the result. No inline script: the page's CSP forbids it.
import { showTakeover, showContent } from "./takeover.js";
import { el, stepItem, apiError, notice, createRun, follow, showBadges, showResult, plural, runsLeftText, runTitle, expectText, urlCode, viewText, whole } from "./render.js";

const $ = (id) => document.getElementById(id);
let current = null; // { id, es, info, done }
let health = null; // the last GET /api/health

function busy(on) {
  for (const b of document.querySelectorAll("#presets button, #task-run")) b.disabled = on;
}

async function loadPresets() {
  const box = $("presets");
  try {
    const resp = await fetch("/api/presets");
    if (!resp.ok) throw new Error(await apiError(resp));
    for (const p of await resp.json()) {
      // The card says what the run will show and how it ends; the line under it, whether it is
      // a live run (loadHealth).
      const b = el("button", { type: "button", class: "preset", "data-preset": p.name, title: p.task },
        el("span", { class: "preset-title", text: p.title }),
        el("span", { class: "preset-task" }, whole("\u201c" + p.task + "\u201d")),
        el("span", { class: "preset-shows" }, whole(p.shows)),
        el("span", { class: "preset-expect", "data-expect": p.expect, "data-expect-signed-in": p.expect_signed_in || null, text: expectText(p) }),
        el("span", { class: "preset-uses" }),
        p.simulated ? el("span", { class: "tag tag-simulated", text: "simulated" }) : null);
      b.addEventListener("click", () => start({ preset: p.name }));
      box.append(b);
    }
    showUses();
  } catch (e) {
    notice("Could not load the presets: " + e.message, "error");
  }
}

// showUses says on each preset card whether a run now is one of the visitor's live runs or plays
// a recording.
function showUses() {
  if (!health) return;
  const mine = health.live && health.runs_left > 0;
  const uses = mine ? (health.runs_left === 1 ? "Uses your last live run." : "Uses one of your " + health.runs_left + " live runs left.")
    : "Plays a recorded real run: " + (health.live ? "you have no live runs left." : "live runs are paused.");
  for (const u of document.querySelectorAll("#presets .preset-uses")) {
    u.textContent = uses;
    u.dataset.live = String(mine);
  }
}

async function loadHealth() {
  try {
    const resp = await fetch("/api/health");
    if (!resp.ok) return;
    const h = await resp.json();
    const l = h.limits;
    const hours = l.window_seconds === 3600 ? "per hour" : "per " + Math.round(l.window_seconds / 60) + " min";
    $("limits").textContent = "Live limits: " + (l.concurrent === 1 ? "one run at a time" : l.concurrent + " runs at a time") +
      ", " + l.per_visitor + " runs per visitor " + hours + ", $" + l.daily_spend_usd + " of model spend a day; then a recorded real run plays instead.";
    // Live runs are on for this visitor only while they have some left: with none left, one line
    // says so, and that their runs play recordings.
    const mine = h.live && h.runs_left > 0;
    const hl = $("health");
    hl.hidden = h.live && !mine;
    hl.className = "health " + (h.live ? "health-live" : "health-recorded");
    hl.textContent = h.live ? "Live runs are on." : "Live runs are paused (" + h.why + "): runs play a recorded real run, labelled recorded.";
    const rl = $("runs-left");
    rl.hidden = !h.live;
    rl.className = "runs-left" + (mine ? "" : " runs-left-none");
    rl.textContent = runsLeftText(h);
    rl.dataset.left = String(h.runs_left);
    health = h;
    showUses();
  } catch (e) { /* the page works without it */ }
}

async function start(body) {
  notice("");
  busy(true);
  const created = await createRun("", body, (e) => "Could not reach the server: " + e.message);
  if (!created) {
    busy(false);
    return;
  }
  attach(created.id, created);
  reveal();
  loadHealth();
}

// reveal brings the run into view when it starts below the fold (on a phone, below the presets):
// a tap must show something happen.
function reveal() {
  const r = $("run").getBoundingClientRect();
  if (r.top > window.innerHeight * 0.6 || r.top < 0) $("run").scrollIntoView({ block: "start" });
}

function resetRun(info) {
  $("run").hidden = false;
  $("steps").replaceChildren();
  $("step-count").textContent = "";
  $("result").hidden = true;
  $("result-body").replaceChildren();
  $("frame").hidden = true;
  $("frame").removeAttribute("src");
  $("screen").classList.remove("has-frame");
  delete $("screen-note").dataset.view;
  $("screen-note").hidden = false;
  $("screen-note").textContent = info && info.recorded ? "Loading the recorded run…" : "Starting the browser…";
  $("frame-caption").textContent = "";
  $("phases").replaceChildren();
  $("phases").hidden = true;
  $("steps").classList.remove("steps-all");
  showInfo(info);
}

function showInfo(info) {
  if (!info) return;
  current.info = info;
  $("run-title").textContent = runTitle(info);
  $("run-title").title = info.task;
  showBadges(info);
  const watch = info.recorded && info.recorded.watch;
  $("watch-box").hidden = !watch;
  $("watch-live").dataset.run = watch || "";
  $("spectator-banner").hidden = !current.spectator;
  const tag = $("live-tag");
  tag.textContent = info.recorded ? "recorded" : info.state === "done" ? "ended" : "live";
  tag.className = "tag " + (info.recorded ? "tag-recorded" : info.state === "done" ? "" : "tag-live");
  const st = $("run-state");
  if (info.state === "queued") st.textContent = "Waiting for a free slot: number " + info.place + " in line.";
  else if (info.state === "running") st.textContent = info.recorded ? "Playing the recorded run…" : "Running…";
  else if (info.state === "waiting_for_human") st.textContent = "Paused at a sign-in page, waiting for a person.";
  else st.textContent = "";
  showTakeover(current.id, info, !current.spectator && !info.recorded);
  st.dataset.state = info.state;
}

function showFrame(id, f) {
  const img = $("frame");
  const note = $("screen-note");
  if (f.view) {
    img.hidden = true;
    img.removeAttribute("src");
    note.hidden = false;
    note.textContent = viewText(f);
    note.dataset.view = f.view;
  } else if (f.seq) {
    img.src = "/api/runs/" + encodeURIComponent(id) + "/frame?seq=" + f.seq;
    img.hidden = false;
    note.hidden = true;
    delete note.dataset.view;
  }
  $("screen").classList.toggle("has-frame", !img.hidden);
  const cap = $("frame-caption");
  cap.replaceChildren();
  if (f.step) cap.append("after " + plural(f.step, "step"));
  if (f.url) cap.append(" \u00b7 ", urlCode(f.url, "frame-url"));
  if (f.verdict) {
    const deny = f.verdict !== "allow";
    cap.append(" \u00b7 last request ", el("span", { class: "verdict " + (deny ? "verdict-deny" : "verdict-allow"), text: deny ? "denied" : "allowed" }),
      f.reason ? " " + f.reason : "");
  }
  cap.dataset.seq = String(f.seq || 0);
}

// On a phone the frame is wider than the screen: a run's first frame is shown from where the
// page's content begins; after that the visitor's own scrolling is kept, also across a placeholder
// shown between frames.
$("frame").addEventListener("load", () => {
  const sc = $("screen");
  if (!current || sc.scrollWidth <= sc.clientWidth) return;
  if (current.scrollX !== undefined) sc.scrollLeft = current.scrollX;
  else showContent(sc, $("frame"));
});
$("screen").addEventListener("scroll", () => {
  if (current && $("screen").classList.contains("has-frame")) current.scrollX = $("screen").scrollLeft;
});

// Click to enlarge: the frame at its own size in a dialog, scrollable on a small screen.
$("frame").addEventListener("click", () => {
  const img = $("frame");
  if (img.hidden || !img.src) return;
  $("zoom-img").src = img.src;
  $("zoom-caption").textContent = $("frame-caption").textContent;
  $("zoom").showModal();
});
$("zoom-close").addEventListener("click", () => $("zoom").close());
$("zoom").addEventListener("click", (e) => { if (e.target === $("zoom")) $("zoom").close(); });

const PHASE_TEXT = {
  "starting the browser": "Starting the browser",
  "taking a browser started before the run (its own profile and egress proxy)": "Taking a fresh browser started before the run (its own profile and egress proxy)",
  "waiting for the browser being started": "Waiting for the browser being started",
  "launching the egress proxy and Chromium": "Launching the egress proxy and Chromium",
  "browser ready": "Browser ready",
};

// showPhase adds a start phase of the run's browser, with its time since the run began when that
// is a tenth of a second or more (a browser started before the run is ready at once).
function showPhase(p) {
  const text = PHASE_TEXT[p.phase] || p.phase;
  $("phases").hidden = false;
  $("phases").append(el("li", { "data-phase": p.phase, text: p.at_ms >= 100 ? text + " \u00b7 " + (p.at_ms / 1000).toFixed(1) + " s" : text }));
  if ($("frame").hidden && !$("steps").children.length) {
    $("screen-note").textContent = p.phase === "browser ready" ? "Browser ready: the model is choosing its first tool…" : text + "…";
  }
}

function addStep(s) {
  $("steps").append(stepItem(s));
  $("step-count").textContent = "(" + plural($("steps").children.length, "step") + ")";
  const box = $("steps");
  box.scrollTop = box.scrollHeight;
}

function finish() {
  if (!current) return;
  current.done = true;
  // The run is over: every step is shown, from the first (while it ran, the box followed the last).
  $("steps").classList.add("steps-all");
  if (current.es) current.es.close();
  busy(false);
  loadHealth();
}

function attach(id, info, spectator) {
  if (current && current.es) current.es.close();
  current = { id, es: null, info: null, done: false, spectator: !!spectator };
  resetRun(info);
  history.replaceState(null, "", "#run=" + encodeURIComponent(id));
  const me = current;
  me.es = follow("", id, () => current === me, {
    run: showInfo,
    phase: showPhase,
    step: addStep,
    frame: (f) => showFrame(id, f),
    result: (res) => showResult(res, me.info),
    end: finish,
    done: () => me.done,
    closed: () => recover(me),
  });
}

// recover fetches the run when its stream closed early.
async function recover(me) {
  try {
    const resp = await fetch("/api/runs/" + encodeURIComponent(me.id));
    if (!resp.ok) throw new Error(await apiError(resp));
    const run = await resp.json();
    if (current !== me) return;
    $("steps").replaceChildren();
    showInfo(run);
    $("phases").replaceChildren();
    for (const p of run.phases || []) showPhase(p);
    for (const s of run.steps) addStep(s);
    if (run.frame) showFrame(me.id, run.frame);
    if (run.result) showResult(run.result, me.info);
    if (run.state !== "done") notice("The event stream closed; reload the page to follow the run.", "error");
  } catch (e) {
    notice("Lost the run's event stream: " + e.message, "error");
  }
  finish();
}

// Watching is read-only: the run's event stream, nothing else.
$("watch-live").addEventListener("click", () => {
  const id = $("watch-live").dataset.run;
  if (id) attach(id, null, true);
});

$("task-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const task = $("task").value.trim();
  if (!task) {
    notice("Type a task naming one record ID, e.g. \u201cLook up SYN-0042\u201d.", "error");
    return;
  }
  start({ task });
});

loadPresets();
loadHealth();
// #run=ID follows that run: a link to a run in progress or done.
function followHash() {
  const m = /^#run=([0-9a-f]{16})$/.exec(location.hash);
  if (m && (!current || current.id !== m[1])) {
    busy(true);
    attach(m[1], null);
  }
}
window.addEventListener("hashchange", followHash);
followHash();
