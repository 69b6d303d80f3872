// stream.js: what the live-demo page (app.js) and the Chrome side panel (sidepanel.js, through
// extension/stream.js, which go generate ./web writes from this file) share: the notice line,
// starting a run, following its event stream, and the run's badges, banners and result. Every
// element named here is in both pages. Everything from the server is set with textContent.
import { el, statusBadge, resultView, recordedText, simulatedText, apiError, whole } from "./render.js";

const $ = (id) => document.getElementById(id);

// notice shows msg in #notice, styled by kind ("error" or "limit"); an empty msg hides it.
export function notice(msg, kind) {
  const n = $("notice");
  n.textContent = msg || "";
  n.className = "notice" + (kind ? " notice-" + kind : "");
  n.hidden = !msg;
}

// createRun starts a run: POST body to server + "/api/runs". It returns the created run, or null
// once the notice says why not (unreachable(e) words a server that could not be reached; a limit
// is shown as one).
export async function createRun(server, body, unreachable) {
  let resp;
  try {
    resp = await fetch(server + "/api/runs", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  } catch (e) {
    notice(unreachable(e), "error");
    return null;
  }
  if (!resp.ok) {
    notice(await apiError(resp), resp.status === 429 ? "limit" : "error");
    return null;
  }
  return resp.json();
}

// follow opens the event stream of run id on server. While isCurrent() holds, each of the events
// run, phase, step, frame and result calls on[name] with its data parsed; the end event calls
// on.end(); and a stream closed before its end, while !on.done(), calls on.closed().
export function follow(server, id, isCurrent, on) {
  const es = new EventSource(server + "/api/runs/" + encodeURIComponent(id) + "/events");
  for (const name of ["run", "phase", "step", "frame", "result"]) {
    es.addEventListener(name, (e) => { if (isCurrent()) on[name](JSON.parse(e.data)); });
  }
  es.addEventListener("end", () => { if (isCurrent()) on.end(); });
  es.addEventListener("error", () => {
    if (!isCurrent() || on.done()) return;
    if (es.readyState === EventSource.CLOSED) on.closed();
  });
  return es;
}

// showBadges shows the run's task and its recorded and simulated tags (#run-badges), and the
// banners that say what recorded and simulated mean for it.
export function showBadges(info) {
  const badges = $("run-badges");
  badges.replaceChildren(el("span", { class: "task-text" }, whole("\u201c" + info.task + "\u201d")));
  if (info.recorded) badges.append(el("span", { class: "tag tag-recorded", text: "recorded" }));
  if (info.simulated) badges.append(el("span", { class: "tag tag-simulated", text: "simulated" }));
  const rb = $("recorded-banner");
  rb.hidden = !info.recorded;
  rb.textContent = info.recorded ? recordedText(info.recorded) : "";
  const sb = $("simulated-banner");
  sb.hidden = !info.simulated;
  sb.textContent = info.simulated ? simulatedText(info) : "";
}

// showResult shows how the run ended (#result) and adds its status to the badges.
export function showResult(res, info) {
  $("result-body").replaceChildren(resultView(res, info));
  $("result").hidden = false;
  $("run-badges").append(statusBadge(res.status));
}
