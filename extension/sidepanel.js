// sidepanel.js: presets, the step stream and the result from a browser-agent serve instance.
// Everything from the server is set with textContent (see render.js).
import { el, statusBadge, stepItem, resultView, recordedText, simulatedText, apiError, runTitle, expectText, viewText, whole } from "./render.js";
import { DEFAULT_SERVER } from "./config.js";

const $ = (id) => document.getElementById(id);
let server = DEFAULT_SERVER;
let current = null; // { id, es, info, done, frameURL }

function notice(msg, kind) {
  const n = $("notice");
  n.textContent = msg || "";
  n.className = "notice" + (kind ? " notice-" + kind : "");
  n.hidden = !msg;
}

function busy(on) {
  for (const b of document.querySelectorAll("#presets button")) b.disabled = on;
}

async function loadPresets() {
  const box = $("presets");
  box.replaceChildren();
  try {
    const resp = await fetch(server + "/api/presets");
    if (!resp.ok) throw new Error(await apiError(resp));
    for (const p of await resp.json()) {
      const b = el("button", { type: "button", class: "preset", "data-preset": p.name, title: p.task },
        el("span", { class: "preset-title", text: p.title }),
        el("span", { class: "preset-shows" }, whole(p.shows)),
        el("span", { class: "preset-expect", text: expectText(p) }),
        // The takeover is on the demo page's live view; this panel has none.
        p.expect_signed_in ? el("span", { class: "preset-shows", text: "Taking over to sign in is done on the demo page, not in this panel." }) : null,
        p.simulated ? el("span", { class: "tag tag-simulated", text: "simulated" }) : null);
      b.addEventListener("click", () => start(p.name));
      box.append(b);
    }
  } catch (e) {
    notice("Could not reach " + server + ": " + e.message + ". Check the server URL in settings, and that the server runs with --allow-origin " + location.origin + ".", "error");
  }
}

async function start(preset) {
  notice("");
  busy(true);
  let resp;
  try {
    resp = await fetch(server + "/api/runs", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ preset }) });
  } catch (e) {
    busy(false);
    notice("Could not reach " + server + ": " + e.message + ". Check that the server runs with --allow-origin " + location.origin + ".", "error");
    return;
  }
  if (!resp.ok) {
    const msg = await apiError(resp);
    busy(false);
    notice(msg, resp.status === 429 ? "limit" : "error");
    return;
  }
  const created = await resp.json();
  attach(created.id, created);
}

function showInfo(info) {
  current.info = info;
  $("run-title").textContent = runTitle(info);
  const badges = $("run-badges");
  badges.replaceChildren(el("span", { class: "task-text" }, whole("\u201c" + info.task + "\u201d")));
  if (info.recorded) badges.append(el("span", { class: "tag tag-recorded", text: "recorded" }));
  if (info.simulated) badges.append(el("span", { class: "tag tag-simulated", text: "simulated" }));
  $("recorded-banner").hidden = !info.recorded;
  $("recorded-banner").textContent = info.recorded ? recordedText(info.recorded) : "";
  $("simulated-banner").hidden = !info.simulated;
  $("simulated-banner").textContent = info.simulated ? simulatedText(info) : "";
  const st = $("run-state");
  st.dataset.state = info.state;
  st.textContent = info.state === "queued" ? "Waiting: number " + info.place + " in line." : info.state === "running" ? (info.recorded ? "Playing the recorded run…" : "Running…") : "";
}

// showFrame fetches the frame (a cross-origin image needs CORS, so it is fetched, not linked).
async function showFrame(me, f) {
  const img = $("frame");
  const note = $("screen-note");
  if (f.view) {
    img.hidden = true;
    note.hidden = false;
    note.textContent = viewText(f);
    return;
  }
  if (!f.seq) return;
  try {
    const resp = await fetch(server + "/api/runs/" + encodeURIComponent(me.id) + "/frame?seq=" + f.seq);
    if (!resp.ok || current !== me) return;
    const blob = await resp.blob();
    if (current !== me) return;
    if (me.frameURL) URL.revokeObjectURL(me.frameURL);
    me.frameURL = URL.createObjectURL(blob);
    img.src = me.frameURL;
    img.hidden = false;
    note.hidden = true;
  } catch (e) { /* keep the last frame */ }
}

function attach(id, info) {
  if (current && current.es) current.es.close();
  current = { id, es: null, info: null, done: false, frameURL: null };
  const me = current;
  $("run").hidden = false;
  $("steps").replaceChildren();
  $("result").hidden = true;
  $("frame").hidden = true;
  $("screen-note").hidden = false;
  $("screen-note").textContent = info && info.recorded ? "Loading the recorded run…" : "Starting the browser…";
  showInfo(info);
  const es = new EventSource(server + "/api/runs/" + encodeURIComponent(id) + "/events");
  me.es = es;
  es.addEventListener("run", (e) => { if (current === me) showInfo(JSON.parse(e.data)); });
  es.addEventListener("phase", (e) => {
    if (current !== me || !$("frame").hidden || $("steps").children.length) return;
    const p = JSON.parse(e.data);
    $("screen-note").textContent = p.phase === "browser ready" ? "Browser ready: the model is choosing its first tool…" : p.phase.charAt(0).toUpperCase() + p.phase.slice(1) + "…";
  });
  es.addEventListener("step", (e) => { if (current === me) $("steps").append(stepItem(JSON.parse(e.data))); });
  es.addEventListener("frame", (e) => { if (current === me) showFrame(me, JSON.parse(e.data)); });
  es.addEventListener("result", (e) => {
    if (current !== me) return;
    const res = JSON.parse(e.data);
    $("result-body").replaceChildren(resultView(res, me.info));
    $("result").hidden = false;
    $("run-badges").append(statusBadge(res.status));
  });
  es.addEventListener("end", () => { if (current === me) { me.done = true; es.close(); busy(false); } });
  es.addEventListener("error", () => {
    if (current !== me || me.done) return;
    if (es.readyState === EventSource.CLOSED) {
      me.done = true;
      busy(false);
      notice("Lost the run's event stream.", "error");
    }
  });
}

$("settings").addEventListener("click", (e) => {
  e.preventDefault();
  chrome.runtime.openOptionsPage();
});

async function init() {
  const got = await chrome.storage.local.get({ server: DEFAULT_SERVER });
  server = String(got.server).replace(/\/+$/, "");
  $("server").textContent = server;
  loadPresets();
}

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "local" && changes.server) init();
});

init();
