// HiveMem dashboard: one WebSocket, fed by read-model changes. No HTTP polling: the page only
// redraws what the server pushes (plus a local clock tick that moves the plots' time axis).
"use strict";

const TOKEN_KEY = "hivemem.dashboard.token";
const $ = (sel) => document.querySelector(sel);

// ---- small DOM helpers (text only: pushed data never becomes HTML) ------------------------
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}
function loaded(node) { node.dataset.loaded = "1"; }

// ---- connection ----------------------------------------------------------------------------
let ws = null;
let retryMs = 1000;
let updates = 0;

function connect(token) {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  ws = new WebSocket(`${proto}//${location.host}/dashboard/ws`);
  ws.onopen = () => ws.send(JSON.stringify({ token }));  // the token travels in the first message
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    updates += 1;
    $("#updates").textContent = `${updates} updates`;
    const handler = HANDLERS[msg.area];
    if (handler) handler(msg.data);
  };
  ws.onclose = (ev) => {
    setConn(false);
    if (ev.code === 4401) {  // the server refused the token: back to the login box with its reason
      sessionStorage.removeItem(TOKEN_KEY);
      showLogin(ev.reason || "token refused");
      return;
    }
    if (sessionStorage.getItem(TOKEN_KEY)) {  // a dropped connection: reconnect (snapshots come again)
      setTimeout(() => connect(token), retryMs);
      retryMs = Math.min(retryMs * 2, 30000);
    }
  };
}

function setConn(on) {
  const c = $("#conn");
  c.textContent = on ? "live" : "offline";
  c.className = `conn ${on ? "on" : "off"}`;
}

function showLogin(error) {
  $("#login").hidden = false;
  $("#main").hidden = true;
  $("#logout").hidden = true;
  $("#login-error").textContent = error || "";
}

function hello(data) {
  retryMs = 1000;
  setConn(true);
  $("#who").textContent = `tenant ${data.tenant} · ${data.subject}`;
  $("#login").hidden = true;
  $("#main").hidden = false;
  $("#logout").hidden = false;
  document.body.dataset.tenant = data.tenant;
}

// ---- envelope flow and the throughput/lag chart ------------------------------------------------
const WINDOW_S = 120;
const seconds = new Map();  // unix second -> envelopes counted in it (from deltas of pushed totals)
let lastTotal = null;
let lagSeries = [];  // [ms, lag] at each push
let firstSec = null;  // the first push: the page knows nothing about the seconds before it
let throughput = null;  // the uPlot chart, made once the panel is shown

function flow(data) {
  const body = $("#flow tbody");
  body.replaceChildren();
  let total = 0;
  for (const t of data.topics) {
    total += t.accepted + t.rejected;
    const reasons = Object.entries(t.reasons).sort((a, b) => b[1] - a[1]).slice(0, 3)
      .map(([code, n]) => `${code} ${n}`).join(", ");
    body.append(el("tr", { "data-type": t.type },
      el("td", { text: t.type }), el("td", { class: "num accepted", text: t.accepted }),
      el("td", { class: "num rejected", text: t.rejected }), el("td", { class: "reasons", text: reasons })));
  }
  if (!data.topics.length) body.append(el("tr", {}, el("td", { colSpan: 4, class: "muted", text: "no envelopes yet" })));
  if (lastTotal !== null && total >= lastTotal) {
    const sec = Math.floor(data.at / 1000);
    seconds.set(sec, (seconds.get(sec) || 0) + (total - lastTotal));
  }
  lastTotal = total;
  firstSec = firstSec ?? Math.floor(data.at / 1000);
  lagSeries.push([data.at, data.lag]);
  lagSeries = lagSeries.filter(([at]) => at > Date.now() - WINDOW_S * 1000);
  $("#flow-total").textContent = `${total.toLocaleString("en-US")} envelopes audited · lag ${data.lag} records · ${stamp(data.at)}`;
  loaded($("#flow"));
  drawThroughput();
}

// One point per second of the window: envelopes counted in it (a second with no push: 0) and the lag
// last pushed at or before it; nothing for the seconds before the page's first push.
function drawThroughput() {
  if ($("#main").hidden) return;
  const now = Math.floor(Date.now() / 1000);
  for (const s of seconds.keys()) if (s < now - WINDOW_S) seconds.delete(s);
  const xs = [], rates = [], lags = [];
  let j = 0, lag = null;
  for (let s = now - WINDOW_S; s <= now; s += 1) {
    while (j < lagSeries.length && lagSeries[j][0] / 1000 <= s + 1) lag = lagSeries[j++][1];
    xs.push(s);
    rates.push(firstSec === null || s < firstSec ? null : seconds.get(s) || 0);
    lags.push(lag);
  }
  throughput = throughput || throughputChart($("#throughput"));
  throughput.setData([xs, rates, lags]);
}

// ---- claws --------------------------------------------------------------------------------
// The dot and the words say the same: present (ACTIVE, healthy, within its ttl) or absent and why.
function absence(c) {
  if (c.status && c.status !== "ACTIVE") return `absent · reported ${c.status}`;
  if (c.healthy === false) return "absent · reported unhealthy";
  return "absent · no heartbeat within its ttl";
}

function setPresence(li, present, why) {
  li.dataset.presence = present ? "present" : "absent";
  li.querySelector(".dot").classList.toggle("active", present);
  li.querySelector(".dot").title = present ? "present" : "absent";
  li.querySelector(".presence").textContent = present ? "present" : why;
  li.querySelector(".presence").className = `presence ${present ? "present" : "absent"}`;
}

function countPresent() {
  const rows = document.querySelectorAll("#claws li[data-claw]");
  const present = document.querySelectorAll('#claws li[data-presence="present"]').length;
  $("#claws-summary").textContent = rows.length ? `${present} of ${rows.length} present` : "";
}

function claws(data) {
  const list = $("#claws");
  const received = Date.now();
  list.replaceChildren(...data.map((c) => {
    const li = el("li", { "data-claw": c.clawId, "data-active-until": c.active ? String(received + c.activeForMs) : "" },
      el("span", { class: "dot" }), el("strong", { text: c.clawId }), " ", el("span", { class: "presence" }),
      el("div", { class: "muted small seen",
        text: [`last seen ${stamp(c.lastSeen)}`, ...c.capabilities].join(" · ") }));
    setPresence(li, c.active, absence(c));
    return li;
  }));
  if (!data.length) list.append(el("li", { class: "muted", text: "no claws yet" }));
  countPresent();
  loaded(list);
}

// Presence going stale changes no row, so nothing is pushed: each claw turns absent on the page's own
// clock when its time runs out.
function expirePresence() {
  const now = Date.now();
  document.querySelectorAll('#claws li[data-presence="present"][data-active-until]').forEach((li) => {
    if (Number(li.dataset.activeUntil) < now) setPresence(li, false, "absent · heartbeat expired");
  });
  countPresent();
}

// ---- proposals, votes, decisions ------------------------------------------------------------
function proposals(data) {
  const box = $("#proposals");
  box.replaceChildren(...data.map((p) => {
    const votes = el("ul", { class: "votes" },
      ...p.votes.map((v) => el("li", { class: `vote ${v.vote}${v.refusal ? " refused" : ""}`, "data-claw": v.clawId,
        title: v.refusal || "", text: `${v.clawId}: ${v.vote}${v.refusal ? ` (${v.refusal})` : ""}` })),
      ...p.refusedVotes.map((v) => el("li", { class: "vote refused", "data-claw": v.clawId,
        text: `${v.clawId}: ${v.reasonCode}` })));
    const d = p.decision;
    const decision = d ? el("div", { class: "decision",
      text: `${d.outcome}: ${d.yes} yes / ${d.no} no of ${d.quorumBasis} (threshold ${d.threshold})`
        + (p.factVersion ? ` → fact v${p.factVersion}` : "") })
      : p.refusal ? el("div", { class: "decision", text: `refused: ${p.refusal}` }) : null;
    return el("div", { class: "proposal", "data-proposal-id": p.proposalId },
      el("span", { class: `status ${p.status}`, text: p.status }),
      el("strong", { text: p.proposalId }), " ", el("span", { class: "muted", text: p.factKey }),
      el("div", { text: p.statement }), votes, decision);
  }));
  if (!data.length) box.append(el("p", { class: "muted", text: "no proposals yet" }));
  loaded(box);
}

// ---- fact version chains --------------------------------------------------------------------
function facts(data) {
  const box = $("#facts");
  box.replaceChildren(...data.map((f) => el("div", { class: "chain", "data-fact-key": f.factKey },
    el("strong", { text: f.factKey }),
    el("ol", {}, ...f.versions.map((v) => el("li", { value: v.version, class: v.validTo ? "closed" : "",
      text: `v${v.version} ${v.statement} (${stamp(v.validFrom)}${v.validTo ? ` – ${stamp(v.validTo)}` : ", current"})` }))))));
  if (!data.length) box.append(el("p", { class: "muted", text: "no facts yet" }));
  loaded(box);
}

// ---- CAML reputation and observations -----------------------------------------------------------
let repChart = null;

function reputation(data) {
  const body = $("#reputation tbody");
  body.replaceChildren(...data.scores.map((s) => el("tr", { "data-claw": s.clawId },
    el("td", { text: s.clawId }), el("td", { class: "num", text: s.score.toFixed(2) }),
    el("td", { class: "muted at", text: stamp(s.at) }))));
  if (!data.scores.length) body.append(el("tr", {}, el("td", { class: "muted", text: "no reputation yet" })));
  const box = $("#rep-history");
  const series = reputationSeries(data.history);
  box.hidden = !series.claws.length;
  $("#rep-note").textContent = !series.claws.length ? "no reputation changes yet"
    : series.hidden ? `the ${series.claws.length} claws changed most recently (${series.hidden} more not drawn)` : "";
  if (series.claws.length && !$("#main").hidden) repChart = reputationChart(box, repChart, series);
  loaded($("#reputation"));
}

function observations(data) {
  const list = $("#observations");
  list.replaceChildren(...data.map((o) => el("li", { "data-observation-id": o.observationId },
    el("strong", { text: `${o.type} · ${o.domain}` }), " ", el("span", { text: o.summary }),
    el("div", { class: "muted small",
      text: `${o.clawId} · confidence ${o.confidence.toFixed(2)} · +${o.validations} / −${o.refutations} · ${stamp(o.at)}` }))));
  if (!data.length) list.append(el("li", { class: "muted", text: "no observations yet" }));
  loaded(list);
}

// ---- KMMS layers for a chosen claw ---------------------------------------------------------------
let kmmsData = { claws: [] };

function kmms(data) {
  kmmsData = data;
  const select = $("#kmms-claw");
  const chosen = select.value;
  select.replaceChildren(...data.claws.map((c) => el("option", { value: c.clawId, text: c.clawId })));
  select.parentElement.hidden = !data.claws.length;
  if (data.claws.some((c) => c.clawId === chosen)) select.value = chosen;
  drawKmms();
  loaded($("#kmms"));
}

function drawKmms() {
  const box = $("#kmms");
  const claw = kmmsData.claws.find((c) => c.clawId === $("#kmms-claw").value);
  if (!claw) { box.replaceChildren(el("p", { class: "muted", text: "no KMMS memory yet" })); return; }
  const names = { L4: "L4 episodes", L3: "L3 summaries", L2: "L2 facts", L1: "L1 abstractions" };
  const max = Math.max(1, ...Object.values(claw.layers));
  box.replaceChildren(el("div", { class: "bars" }, ...["L4", "L3", "L2", "L1"].map((l) => el("div", { class: "bar" },
    el("span", { class: "label", text: names[l] }),
    el("span", { class: "track" }, el("span", { class: "fill", style: `width:${(100 * claw.layers[l]) / max}%` })),
    el("span", { class: "num", "data-layer": l, text: claw.layers[l] })))));
}

// ---- graph (drawn by graph.js) ---------------------------------------------------------------------
function graph(data) {
  graphParts.base = { nodes: data.nodes, edges: data.edges };
  syncGraph();
  loaded($("#graph"));
}

// The CLAM area (nodes and triples) arrives as area "clam". Accepts {nodes:[{id|conceptId, label|name}],
// triples:[{subject, predicate, object}]} and draws them beside the rest, in their own group.
function renderClamGraph(data) {
  graphParts.clam = clamGraph(data);
  syncGraph();
  clamPanel(data);
}

// The seed's bifurcated counters, then the newest triples and nodes as text.
function clamPanel(data) {
  const c = data.counts;
  if (!c) return;
  $("#clam-counts").replaceChildren(...["volatile", "semantic", "episodic", "triples"].map((k) =>
    el("div", { class: "stat", "data-count": k }, el("b", { text: c[k] }), " ", el("span", { text: k }))));
  const triples = (data.triples || []).slice(0, 6).map((t) => el("li", {},
    el("span", { text: t.subject }), el("span", { class: "pred", text: ` —${t.predicate}→ ` }), el("span", { text: t.object })));
  const nodes = (data.nodes || []).slice(0, 6).map((n) => el("li", {},
    el("span", { class: `tag ${n.group}`, text: n.group }), " ", el("span", { text: String(n.label).slice(0, 80) })));
  $("#clam-recent").replaceChildren(
    ...(triples.length ? [el("h3", { text: "Newest triples" }), el("ul", { class: "list" }, ...triples)] : []),
    ...(nodes.length ? [el("h3", { text: "Newest nodes" }), el("ul", { class: "list" }, ...nodes)] : []));
  loaded($("#clam-counts"));
}
window.renderClamGraph = renderClamGraph;

// ---- wiring ------------------------------------------------------------------------------------------
const HANDLERS = { hello, flow, claws, proposals, facts, reputation, observations, kmms, graph, clam: renderClamGraph };

document.addEventListener("DOMContentLoaded", () => {
  $("#login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const token = $("#token").value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    $("#token").value = "";
    $("#login-error").textContent = "";
    connect(token);
  });
  $("#logout").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    if (ws) ws.close();
    location.reload();
  });
  $("#kmms-claw").addEventListener("change", drawKmms);
  // A local clock only: slides the chart's time axis and ages presence; it never asks the server for anything.
  setInterval(() => { drawThroughput(); expirePresence(); }, 1000);
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) connect(saved);
});
