// sidepanel.js: presets, the step stream and the result from a browser-agent serve instance.
// Everything from the server is set with textContent (see render.js).
import { el, stepItem, apiError, notice, createRun, follow, showBadges, showResult, runTitle, expectText, viewText, whole } from "./render.js";
import { DEFAULT_SERVER } from "./config.js";

const $ = (id) => document.getElementById(id);
let server = DEFAULT_SERVER;
let current = null; // { id, es, info, done, frameURL }

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
  const created = await createRun(server, { preset },
    (e) => "Could not reach " + server + ": " + e.message + ". Check that the server runs with --allow-origin " + location.origin + ".");
  if (!created) {
    busy(false);
    return;
  }
  attach(created.id, created);
}

function showInfo(info) {
  current.info = info;
  $("run-title").textContent = runTitle(info);
  showBadges(info);
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
  me.es = follow(server, id, () => current === me, {
    run: showInfo,
    phase: (p) => {
      if (!$("frame").hidden || $("steps").children.length) return;
      $("screen-note").textContent = p.phase === "browser ready" ? "Browser ready: the model is choosing its first tool…" : p.phase.charAt(0).toUpperCase() + p.phase.slice(1) + "…";
    },
    step: (s) => $("steps").append(stepItem(s)),
    frame: (f) => showFrame(me, f),
    result: (res) => showResult(res, me.info),
    end: () => { me.done = true; me.es.close(); busy(false); },
    done: () => me.done,
    closed: () => {
      me.done = true;
      busy(false);
      notice("Lost the run's event stream.", "error");
    },
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
