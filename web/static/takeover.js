// takeover.js is the sign-in handoff on the live view: while a run waits at a sign-in page, the
// visitor who started it may take over. Their view of the page (frames only they can fetch) takes
// clicks and keys, sent as input events to that one page: no navigation, no script, no other tab.
// Spectators see only the banner saying who is in control.

const $ = (id) => document.getElementById(id);
const KEYS = new Set(["Enter", "Tab", "Backspace", "Delete", "Escape", "ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"]);

let state = null; // { id, held, timer, url, idle, max }

async function post(id, what, body) {
  const r = await fetch("/api/runs/" + encodeURIComponent(id) + "/" + what, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}),
  });
  if (!r.ok && r.status !== 204) {
    let msg = r.status + "";
    try { msg = (await r.json()).error || msg; } catch (e) { /* not JSON */ }
    throw new Error(msg);
  }
  return r.status === 204 ? null : r.json();
}

function stopFrames() {
  if (state && state.timer) clearInterval(state.timer);
  if (state && state.url) URL.revokeObjectURL(state.url);
  if (state) { state.timer = null; state.url = null; }
  const img = $("takeover-frame");
  img.hidden = true;
  img.removeAttribute("src");
}

// One frame request at a time: each holds the page while it is drawn, so requests piling up on a
// busy machine would queue the holder's inputs behind them. A refresh asked for while one is in
// flight is made once, after it.
let fetching = false, again = false;
async function refresh() {
  if (!state || !state.held) return;
  if (fetching) { again = true; return; }
  fetching = true;
  try {
    await refreshOnce();
  } finally {
    fetching = false;
    if (again) { again = false; setTimeout(refresh, 0); }
  }
}

async function refreshOnce() {
  const r = await fetch("/api/runs/" + encodeURIComponent(state.id) + "/takeover/frame", { cache: "no-store" });
  if (!r.ok) {
    if (r.status === 409) ended("Your control ended (" + state.idle + " s without input, or its " + state.max + " s maximum). " +
      "If you signed in, the agent continues; if not, the run ends: human action required.");
    return;
  }
  const blob = await r.blob();
  if (!state || !state.held) return; // the lease ended while the frame was on its way
  const url = URL.createObjectURL(blob);
  const img = $("takeover-frame");
  if (state.url) URL.revokeObjectURL(state.url);
  state.url = url;
  img.src = url;
  if (img.hidden) {
    img.hidden = false;
    // On a phone the view is wider than the screen: it starts where the page's content does.
    img.addEventListener("load", () => showContent($("takeover-screen"), img), { once: true });
  }
}

function ended(msg) {
  if (state) state.held = false;
  stopFrames();
  $("takeover-release").hidden = true;
  $("takeover-start").hidden = true;
  $("takeover-note").textContent = msg;
}

// showContent scrolls a box holding a frame wider than itself (on a phone) to where the page's
// content begins: the first column, from the left, that is not the page's white margin. A page
// with no white margin is shown from its left edge.
export function showContent(box, img) {
  if (box.scrollWidth <= box.clientWidth || !img.naturalWidth) return;
  const w = img.naturalWidth, h = img.naturalHeight;
  const c = document.createElement("canvas");
  c.width = w;
  c.height = h;
  const g = c.getContext("2d", { willReadFrequently: true });
  g.drawImage(img, 0, 0);
  const px = g.getImageData(0, 0, w, h).data;
  let left = w;
  for (let y = 0; y < h; y += 4) {
    for (let x = 0; x < left; x++) {
      const i = (y * w + x) * 4;
      if (px[i] < 224 || px[i + 1] < 224 || px[i + 2] < 224) { left = x; break; }
    }
  }
  box.scrollLeft = left === w ? 0 : Math.max(0, left * img.clientWidth / w - 8);
}

// Inputs go one at a time, in the order they were made.
let queue = Promise.resolve();
function send(input) {
  if (!state || !state.held) return;
  const id = state.id;
  queue = queue.then(async () => {
    try { await post(id, "input", input); } catch (e) { $("takeover-note").textContent = "Input not taken: " + e.message; }
  });
  queue.then(() => setTimeout(refresh, 150));
}

// What the banner says once nobody is in control of the browser but the agent.
const BANNER_BACK = "the agent has the browser again; nobody else is in control";
const BANNER_RELEASING = "handing the browser back to the agent; you are no longer in control";
const BANNER_ENDED = "the run has ended; its browser is closed";

// last is the info the panel last showed, shown again once the server said whose run it is.
let last = null;

// whose asks the server whether this visitor started the run (and so may take over).
async function whose(id) {
  let yours = false;
  try {
    const r = await fetch("/api/runs/" + encodeURIComponent(id) + "/takeover", { cache: "no-store" });
    if (r.ok) yours = !!(await r.json()).yours;
  } catch (e) { /* not known: a spectator */ }
  if (!state || state.id !== id) return;
  state.yours = yours;
  if (last && last.id === id) showTakeover(last.id, last.info, last.mine);
}

// showTakeover updates the panel from the run's info. mine is false for a spectator.
export function showTakeover(id, info, mine) {
  const box = $("takeover");
  const t = info && info.state === "waiting_for_human" ? info.takeover : null;
  if (!t) {
    // No takeover now: the panel, if this run had one, says so (the agent has the browser back,
    // or the run is over), never that a person is still in control.
    if (state && state.id === id) {
      if (state.held) ended("The agent has the browser again: it continues in the same session.");
      const done = !!info && info.state === "done";
      box.classList.add("takeover-over");
      const banner = $("takeover-banner");
      banner.textContent = done ? BANNER_ENDED : BANNER_BACK;
      banner.toggleAttribute("data-ended", done);
      if (done) $("takeover-note").textContent = "";
    }
    box.hidden = !state || state.id !== id;
    return;
  }
  box.classList.remove("takeover-over");
  $("takeover-banner").removeAttribute("data-ended");
  if (!state || state.id !== id) {
    state = { id, held: false, timer: null, url: null, idle: 0, max: 0, yours: mine ? null : false };
    if (mine) whose(id);
  }
  last = { id, info, mine };
  box.hidden = false;
  $("takeover-banner").textContent = t.banner;
  const until = new Date(t.wait_until);
  // A page may follow a link to another visitor's run: it is theirs only if the server says so.
  mine = mine && state.yours === true;
  $("takeover-start").hidden = !mine || t.held || state.held;
  if (state.yours === null) {
    $("takeover-note").textContent = "";
  } else if (!mine) {
    $("takeover-note").textContent = "Only the visitor who started this run can take over; their screen is not shown to others.";
  } else if (!t.held && !state.held) {
    $("takeover-note").textContent = "Waiting for you: the agent reached a sign-in page and is paused; it sees nothing of this page. " +
      "Take over before " + until.toLocaleTimeString() + ", sign in on the page, then hand back. " +
      "If nobody takes over by then, the run ends: human action required.";
  }
}

$("takeover-start").addEventListener("click", async () => {
  if (!state) return;
  let lease;
  try {
    lease = await post(state.id, "takeover");
  } catch (e) { $("takeover-note").textContent = "Take over refused: " + e.message; return; }
  state.held = true;
  state.idle = lease.idle_seconds;
  state.max = lease.max_seconds;
  $("takeover-start").hidden = true;
  $("takeover-release").hidden = false;
  $("takeover-note").textContent = "You are in control: click into the page and type. The agent is paused and never sees what you type. " +
    "Your control ends after " + state.idle + " s without input, " + state.max + " s at most.";
  await refresh();
  state.timer = setInterval(refresh, 1000);
  $("takeover-frame").focus();
});

$("takeover-release").addEventListener("click", async () => {
  if (!state) return;
  await queue; // what was typed reaches the page before the agent gets it back
  try { await post(state.id, "release"); } catch (e) { /* the lease may have ended already */ }
  if (state && state.held) $("takeover-banner").textContent = BANNER_RELEASING; // until the run says the agent has it
  ended("Handed back: the agent continues in the same browser. If the page still asks for a password, the run ends: human action required.");
});

$("takeover-frame").addEventListener("click", (e) => {
  const r = e.target.getBoundingClientRect();
  send({ kind: "click", x: (e.clientX - r.left) / r.width, y: (e.clientY - r.top) / r.height });
  e.target.focus();
});

$("takeover-frame").addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (KEYS.has(e.key)) { e.preventDefault(); send({ kind: "key", key: e.key === "Tab" && e.shiftKey ? "Shift+Tab" : e.key }); return; }
  if (e.key.length === 1) { e.preventDefault(); send({ kind: "text", text: e.key }); }
});
