// render.js builds the DOM of steps and results for the live-demo page and the Chrome side panel,
// and holds what the two share besides (at the end): the notice line, starting a run, following its
// event stream, the run's badges, banners and result.
// It is the one copy: the side panel loads it from this folder, and the page's server embeds it
// (package extension) and serves it as /static/render.js.
// Everything from the server is set with textContent, never as HTML.

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}

const STATUS = {
  answered: "Answered",
  uncertain: "Uncertain",
  blocked: "Blocked",
  human_action_required: "Human action required",
  rejected: "Rejected",
  error: "Error",
};

export function statusLabel(status) {
  return STATUS[status] || String(status);
}

export function statusBadge(status) {
  return el("span", { class: "status status-" + String(status).replace(/[^a-z_]/g, ""), "data-status": status, text: statusLabel(status) });
}

export function fmtTime(iso) {
  const d = new Date(iso);
  if (isNaN(d.getTime())) return String(iso || "");
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

// runTitle is a run's heading: its preset's title as the preset's card names it, or "Your task".
export function runTitle(info) {
  return info.title || (info.preset ? "Preset \u201c" + info.preset + "\u201d" : "Your task");
}

// whole is text with every ID such as SYN-0042 kept on one line (a line may break after its
// hyphen otherwise).
export function whole(text) {
  const out = document.createDocumentFragment();
  const s = String(text);
  let last = 0;
  for (const m of s.matchAll(/\b[A-Z][A-Z0-9]*-\d+\b/g)) {
    out.append(s.slice(last, m.index), el("span", { class: "url-part", text: m[0] }));
    last = m.index + m[0].length;
  }
  out.append(s.slice(last));
  return out;
}

// urlCode shows a URL as code that wraps only between its parts (after "/", "?", "&", "=", "#"),
// never inside one: a record ID such as SYN-0042 stays whole. A part longer than 24 characters (a
// redacted host's tag, a long slug) may break anywhere, or it would widen a phone's page. The text
// is the URL unchanged.
export function urlCode(url, cls) {
  const c = el("code", { class: (cls ? cls + " " : "") + "url", title: url });
  const parts = String(url).split(/(?<=[/?&=#])/);
  parts.forEach((p, i) => {
    if (i > 0) c.append(el("wbr"));
    c.append(p.length <= 24 ? el("span", { class: "url-part", text: p }) : p);
  });
  return c;
}

// plural writes "1 step", "2 steps".
export function plural(n, one, many) {
  return n + " " + (n === 1 ? one : (many || one + "s"));
}

const OUTCOME = { answered: "answered", uncertain: "uncertain", blocked: "blocked" };

// stepItem is one row of the step stream: number, tool, target, verdict, reason. Denials stand out.
// The final answer step is labelled by how the run ends (answered, uncertain, blocked), not as a
// policy denial.
export function stepItem(s) {
  const outcome = OUTCOME[s.outcome];
  const deny = !outcome && s.verdict !== "allow";
  const cls = "step " + (outcome ? "outcome outcome-" + outcome : deny ? "deny" : "allow");
  const label = outcome || (deny ? "denied" : "allowed");
  const vcls = "verdict " + (outcome ? "verdict-" + outcome : deny ? "verdict-deny" : "verdict-allow");
  return el("li", { class: cls, "data-verdict": s.verdict, "data-tool": s.tool, "data-outcome": outcome || null },
    el("span", { class: "step-n", text: String(s.n) }),
    el("span", { class: "step-main" },
      el("span", { class: "step-tool", text: s.tool }),
      s.url ? urlCode(s.url, "step-url") : null,
      el("span", { class: "step-reason" },
        el("span", { class: vcls, text: label }),
        " " + (s.reason || ""),
        s.layer ? el("span", { class: "step-layer", text: " · " + s.layer }) : null,
        s.simulated ? el("span", { class: "tag tag-simulated", text: "simulated" }) : null)));
}

// compareTable shows every field the run extracted about its record, one column per source,
// after the answer's own value when the run answered: the agreeing fields and the conflicting
// ones, each value beside the source it came from. On narrow screens the rows stack (each cell
// says its source).
export function compareTable(res) {
  const ev = (res.evidence || []).filter((e) => !res.record_id || e.record_id === res.record_id);
  const urls = sourceURLs(res);
  const answer = new Map(answered(res) ? res.fields.map((f) => [f.label, f.value]) : []);
  const labels = [...answer.keys()];
  const val = new Map();
  for (const e of ev) {
    if (!urls.includes(e.url)) urls.push(e.url);
    if (!labels.includes(e.label)) labels.push(e.label);
    if (!val.has(e.label + "\u0000" + e.url)) val.set(e.label + "\u0000" + e.url, e.value);
  }
  const conflicting = new Set((res.conflicts || []).map((c) => c.label));
  const head = el("tr", {}, el("th", { text: "Field" }));
  if (answer.size) head.append(el("th", { text: "Answer" }));
  urls.forEach((u, i) => head.append(el("th", {}, el("span", { class: "source-n", text: "Source " + (i + 1) + " " }), urlCode(u))));
  const body = el("tbody");
  for (const l of labels) {
    const vals = urls.map((u) => val.get(l + "\u0000" + u));
    const present = vals.filter((v) => v !== undefined);
    const conflict = conflicting.has(l) || new Set(present).size > 1 || (answer.has(l) && present.some((v) => v !== answer.get(l)));
    const row = el("tr", { class: conflict ? "row-conflict" : "row-agree", "data-field": l },
      el("th", { scope: "row" }, l, el("span", { class: "tag " + (conflict ? "tag-conflict" : "tag-agree"), text: conflict ? "conflict" : "agree" })));
    if (answer.size) row.append(el("td", { class: "answer-value", "data-source": "Answer", text: answer.has(l) ? answer.get(l) : "\u2014" }));
    vals.forEach((v, i) => row.append(el("td", { "data-source": "Source " + (i + 1), title: urls[i], text: v === undefined ? "\u2014" : v })));
    body.append(row);
  }
  return el("div", { class: "conflict-wrap" }, el("table", { class: "conflict compare" }, el("thead", {}, head), body));
}

// answered says whether the result is an answer with fields: only then is there an answer to show.
function answered(res) {
  return res.status === "answered" && !!(res.fields && res.fields.length);
}

// sourceURLs are the run's sources in the order the result lists them (Source 1, Source 2, ...).
function sourceURLs(res) {
  return (res.sources || []).map((s) => s.url);
}

// resultView renders a run's result: status, reason, fields, sources with retrieval times, and
// conflicting values side by side.
export function resultView(res, info) {
  const box = el("div", { class: "result-view", "data-status": res.status });
  box.append(el("p", { class: "result-status" }, statusBadge(res.status), " ", el("span", { class: "result-reason", text: res.reason })));
  if (res.status === "human_action_required") {
    box.append(el("p", { class: "hint", text: "The agent stopped at a sign-in form and read nothing from it, and nobody signed in. While a run waits at a sign-in page, the visitor who started it can take over from the live view on the demo page, sign in and hand back; the agent then continues in the same session." }));
  }
  if (res.note) {
    box.append(el("p", { class: "note" }, el("strong", { text: "Model said: " }), res.note));
  }
  if (answered(res) || (res.conflicts && res.conflicts.length)) {
    box.append(el("h4", { text: answered(res) ? "The answer, field by field, beside each source" : "Every field, by source" }), compareTable(res));
  }
  if (res.sources && res.sources.length) {
    const ul = el("ul", { class: "sources" });
    res.sources.forEach((s, i) => {
      ul.append(el("li", {},
        el("span", { class: "source-n", text: "Source " + (i + 1) + " " }),
        urlCode(s.url),
        el("span", { class: "retrieved", text: " retrieved " + fmtTime(s.retrieved_at) }),
        s.cited ? el("span", { class: "tag", text: "cited" }) : null));
    });
    box.append(el("h4", { text: "Sources" }), ul);
  }
  if (res.simulated) {
    box.append(el("p", { class: "hint simulated-note", text: "Simulated: one scripted tool call was substituted for the model's turn, because a real model refuses it; the policy's decision on it is real." }));
  }
  const rec = info && info.recorded;
  const meta = ["model " + (res.model || "?"), plural((res.steps || []).length, "step")];
  if (res.usage && res.usage.cost_usd) meta.push("$" + res.usage.cost_usd.toFixed(4));
  if (rec) {
    meta.push("recorded " + fmtTime(rec.recorded_at));
    if (res.run_id) meta.push("recorded as run " + res.run_id);
  } else if (res.run_id) {
    meta.push("run " + res.run_id + " (browser-agent audit " + res.run_id + ")");
  }
  box.append(el("p", { class: "meta", text: meta.join(" · ") }));
  return box;
}

// The live view's placeholders, by the reason the server gives for showing no frame.
const VIEW_TEXT = {
  "sign-in page not shown": "Sign-in page: the live view is withheld and nothing on the page was read.",
  "handed back": "Handed back: the agent reads nothing of the page the person used, and opens the page it needs again.",
  "no live view": "This run's browser has no live view.",
  "screenshot failed": "The browser could not take this screenshot.",
};

// viewText says why the live view shows no frame. "No page open" is explained by a denial only
// when the last request was denied.
export function viewText(f) {
  if (f.view === "no page open") {
    return f.verdict && f.verdict !== "allow"
      ? "No page open: the denied request was decided before any browser work, so the browser never moved."
      : "No page open in the agent's browser yet.";
  }
  return VIEW_TEXT[f.view] || f.view;
}

// recordedText labels a recorded run.
export function recordedText(rec) {
  let t = "Recorded run: live runs are paused (" + rec.why + "). ";
  if (rec.kind === "busy") t = "Recorded run: the live browser is busy with another visitor's run (" + rec.why + "), so a recorded real run plays instead. ";
  else if (rec.kind === "visitor") t = "Recorded run: you have used your live runs for now (" + rec.why + "), so a recorded real run plays instead. ";
  if (rec.preset) {
    t += "This is a real run recorded " + fmtTime(rec.recorded_at) + " with model " + rec.model + " in " + rec.browser + ".";
    if (rec.other_task) t += " It is the recording of \u201c" + rec.task + "\u201d, not of your task.";
  }
  return t;
}

// simulatedText labels a simulated preset's run: live, it drives the real browser and counts as
// one of the visitor's live runs; recorded, it was a real run when recorded.
export function simulatedText(info) {
  const t = "Simulated preset: a real model refuses this, so one scripted tool call is substituted for its turn to show the policy blocking it. ";
  return t + (info && info.recorded ? "The decision was real when this run was recorded." : "The browser and the decision are real, and the run counts as one of your live runs.");
}

// expectText says how a preset's run ends, as its card shows it.
export function expectText(p) {
  if (p.expect_signed_in) return "Ends " + statusLabel(p.expect_signed_in).toLowerCase() + " once you sign in; otherwise " + statusLabel(p.expect).toLowerCase() + ".";
  return "Ends " + statusLabel(p.expect).toLowerCase() + ".";
}

// runsLeftText says how many live runs a visitor has left in the window.
export function runsLeftText(h) {
  const per = h.limits && h.limits.window_seconds !== 3600 ? "in the next " + Math.round(h.limits.window_seconds / 60) + " min" : "this hour";
  if (h.runs_left > 0) return plural(h.runs_left, "live run") + " left " + per + ".";
  const back = h.runs_back_seconds > 0 ? " The next one in " + (h.runs_back_seconds < 120 ? h.runs_back_seconds + " s" : Math.ceil(h.runs_back_seconds / 60) + " min") + "." : "";
  return "No live runs left " + per + ": runs play a recorded real run instead." + back;
}

// apiError turns a failed response into a message for a person.
export async function apiError(resp) {
  let msg = "HTTP " + resp.status;
  try {
    const j = await resp.json();
    if (j && j.error) msg = j.error;
  } catch (e) { /* not JSON */ }
  if (resp.status === 429) {
    const after = resp.headers.get("Retry-After");
    if (after && !/try again/.test(msg)) msg += "; try again in " + after + " s";
  }
  return msg;
}

// What the page (app.js) and the side panel (sidepanel.js) share besides the renderer. Every
// element named here is in both pages.

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
