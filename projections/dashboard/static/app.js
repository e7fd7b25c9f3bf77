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
const when = (ms) => (ms ? new Date(ms).toLocaleTimeString() : "—");
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

// ---- envelope flow and the throughput/lag plot ------------------------------------------------
const seconds = new Map();  // unix second -> envelopes counted in it (from deltas of pushed totals)
let lastTotal = null;
let lagSeries = [];  // [ms, lag]

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
  if (lastTotal !== null && total >= lastTotal) {
    const sec = Math.floor(data.at / 1000);
    seconds.set(sec, (seconds.get(sec) || 0) + (total - lastTotal));
  }
  lastTotal = total;
  lagSeries.push([data.at, data.lag]);
  lagSeries = lagSeries.filter(([at]) => at > Date.now() - WINDOW_S * 1000);
  loaded($("#flow"));
  drawThroughput();
}

const WINDOW_S = 120;

function drawThroughput() {
  const canvas = $("#throughput");
  const g = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 28;
  g.clearRect(0, 0, w, h);
  const now = Math.floor(Date.now() / 1000);
  const xs = (sec) => pad + ((sec - (now - WINDOW_S)) / WINDOW_S) * (w - 2 * pad);
  const rates = [];
  for (let s = now - WINDOW_S; s <= now; s += 1) rates.push([s, seconds.get(s) || 0]);  // no push: nothing changed
  for (const s of seconds.keys()) if (s < now - WINDOW_S) seconds.delete(s);
  const maxRate = Math.max(1, ...rates.map((r) => r[1]));
  const maxLag = Math.max(1, ...lagSeries.map((r) => r[1]));
  g.strokeStyle = "#e1e4ea";
  g.strokeRect(pad, 4, w - 2 * pad, h - pad - 4);
  g.fillStyle = "#6b7385";
  g.font = "11px system-ui";
  g.fillText(`${maxRate}/s`, 2, 14);
  g.fillText(`${maxLag}`, w - pad + 2, 14);
  g.fillText(`-${WINDOW_S}s`, pad, h - 10);
  g.fillText("now", w - pad - 20, h - 10);
  const ys = (v, max) => h - pad - (v / max) * (h - pad - 8);
  g.strokeStyle = "#3b6fd8";
  g.beginPath();
  rates.forEach(([s, r], i) => (i ? g.lineTo(xs(s), ys(r, maxRate)) : g.moveTo(xs(s), ys(r, maxRate))));
  g.stroke();
  g.strokeStyle = "#e08a2c";
  g.beginPath();
  lagSeries.forEach(([at, lag], i) => {
    const x = xs(at / 1000), y = ys(lag, maxLag);
    if (i) g.lineTo(x, y); else g.moveTo(x, y);
  });
  if (lagSeries.length) g.lineTo(xs(now), ys(lagSeries[lagSeries.length - 1][1], maxLag));
  g.stroke();
}

// ---- claws --------------------------------------------------------------------------------
function claws(data) {
  const list = $("#claws");
  const received = Date.now();
  list.replaceChildren(...data.map((c) => el("li", { "data-claw": c.clawId },
    el("span", { class: `dot ${c.active ? "active" : ""}`, title: c.active ? "present" : "absent",
      "data-active-until": c.active ? String(received + c.activeForMs) : "" }),
    el("strong", { text: c.clawId }), " ",
    el("span", { class: "muted", text: `${c.status || "—"} · seen ${when(c.lastSeen)}` }),
    c.capabilities.length ? el("div", { class: "muted small", text: c.capabilities.join(", ") }) : null)));
  if (!data.length) list.append(el("li", { class: "muted", text: "no claws yet" }));
  loaded(list);
}

// Presence going stale changes no row, so nothing is pushed: each dot greys when its time runs out.
function expirePresence() {
  const now = Date.now();
  document.querySelectorAll("#claws .dot.active[data-active-until]").forEach((dot) => {
    if (Number(dot.dataset.activeUntil) < now) {
      dot.classList.remove("active");
      dot.title = "absent (presence expired)";
    }
  });
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
      text: `v${v.version} ${v.statement} (${when(v.validFrom)}${v.validTo ? ` – ${when(v.validTo)}` : ", current"})` }))))));
  if (!data.length) box.append(el("p", { class: "muted", text: "no facts yet" }));
  loaded(box);
}

// ---- CAML reputation and observations -----------------------------------------------------------
const PALETTE = ["#3b6fd8", "#1f9d55", "#d64545", "#b7791f", "#805ad5", "#2c7a7b", "#d53f8c", "#4a5568"];

function reputation(data) {
  const body = $("#reputation tbody");
  body.replaceChildren(...data.scores.map((s) => el("tr", { "data-claw": s.clawId },
    el("td", { text: s.clawId }), el("td", { class: "num", text: s.score.toFixed(3) }),
    el("td", { class: "muted", text: when(s.at) }))));
  if (!data.scores.length) body.append(el("tr", {}, el("td", { class: "muted", text: "no reputation yet" })));
  drawReputation(data.history);
  loaded($("#reputation"));
}

function drawReputation(history) {
  const canvas = $("#rep-history");
  const g = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 24;
  g.clearRect(0, 0, w, h);
  g.strokeStyle = "#e1e4ea";
  g.strokeRect(pad, 4, w - 2 * pad, h - pad - 4);
  if (!history.length) return;
  const t0 = history[0].at, t1 = Math.max(history[history.length - 1].at, t0 + 1);
  const lo = Math.min(...history.map((e) => e.score)), hi = Math.max(...history.map((e) => e.score), lo + 0.01);
  const byClaw = new Map();
  for (const e of history) (byClaw.get(e.clawId) || byClaw.set(e.clawId, []).get(e.clawId)).push(e);
  g.font = "11px system-ui";
  let i = 0;
  for (const [claw, events] of byClaw) {
    const color = PALETTE[i % PALETTE.length];
    g.strokeStyle = color;
    g.beginPath();
    events.forEach((e, j) => {
      const x = pad + ((e.at - t0) / (t1 - t0)) * (w - 2 * pad), y = h - pad - ((e.score - lo) / (hi - lo)) * (h - pad - 8);
      if (j) g.lineTo(x, y); else g.moveTo(x, y);
    });
    g.stroke();
    g.fillStyle = color;
    g.fillText(claw, pad + 4 + 70 * (i % 5), h - 6);
    i += 1;
  }
}

function observations(data) {
  const list = $("#observations");
  list.replaceChildren(...data.map((o) => el("li", { "data-observation-id": o.observationId },
    el("strong", { text: `${o.type} · ${o.domain}` }), " ", el("span", { text: o.summary }),
    el("div", { class: "muted small",
      text: `${o.clawId} · confidence ${o.confidence.toFixed(2)} · +${o.validations} / −${o.refutations} · ${when(o.at)}` }))));
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
    el("span", { class: "fill", style: `width:${(200 * claw.layers[l]) / max}px` }),
    el("span", { class: "num", "data-layer": l, text: claw.layers[l] })))));
}

// ---- graph (vis-network, vendored) -----------------------------------------------------------------
let network = null;
let graphNodes = null, graphEdges = null;
const graphParts = { base: { nodes: [], edges: [] }, clam: { nodes: [], edges: [] } };
const GROUPS = {
  claw: { color: "#3b6fd8", shape: "dot" }, proposal: { color: "#b7791f", shape: "box" },
  fact: { color: "#1f9d55", shape: "diamond" }, entity: { color: "#805ad5", shape: "ellipse" },
  clam: { color: "#2c7a7b", shape: "hexagon" },
};

function ensureNetwork() {
  if (network || typeof vis === "undefined") return network;
  graphNodes = new vis.DataSet();
  graphEdges = new vis.DataSet();
  network = new vis.Network($("#graph"), { nodes: graphNodes, edges: graphEdges }, {
    groups: Object.fromEntries(Object.entries(GROUPS).map(([k, v]) => [k, { ...v, font: { color: "#1d2330" } }])),
    edges: { arrows: "to", font: { size: 10, align: "middle" }, color: "#9aa3b5" },
    physics: { stabilization: { iterations: 150 } },
  });
  return network;
}

// Diff into the DataSets, so a push moves only what changed instead of re-laying out the graph.
function syncGraph() {
  if (!ensureNetwork()) return;
  const nodes = [...graphParts.base.nodes, ...graphParts.clam.nodes];
  const edges = [...new Map([...graphParts.base.edges, ...graphParts.clam.edges]
    .map((e) => [`${e.from}>${e.to}>${e.label || ""}`, e])).entries()].map(([id, e]) => ({ id, ...e }));
  const keepN = new Set(nodes.map((n) => n.id)), keepE = new Set(edges.map((e) => e.id));
  graphNodes.remove(graphNodes.getIds().filter((id) => !keepN.has(id)));
  graphEdges.remove(graphEdges.getIds().filter((id) => !keepE.has(id)));
  graphNodes.update(nodes);
  graphEdges.update(edges);
}

function graph(data) {
  graphParts.base = { nodes: data.nodes, edges: data.edges };
  syncGraph();
  loaded($("#graph"));
}

// The CLAM area (nodes and triples) arrives as area "clam". Accepts {nodes:[{id|conceptId, label|name}],
// triples:[{subject, predicate, object}]} and draws them beside the rest, in their own group.
function renderClamGraph(data) {
  const nodes = new Map();
  const add = (id, label) => { if (!nodes.has(`clam:${id}`)) nodes.set(`clam:${id}`, { id: `clam:${id}`, label: String(label ?? id).slice(0, 60), group: "clam" }); };
  for (const n of data.nodes || []) {
    const id = n.id ?? n.conceptId ?? n.nodeId;
    if (id !== undefined) add(id, n.label ?? n.name ?? n.text ?? id);
    if (id !== undefined && n.group) nodes.get(`clam:${id}`).group = `clam-${n.group}`;  // volatile / semantic / episodic
  }
  const edges = [];
  for (const t of data.triples || []) {
    add(t.subject, t.subject);
    add(t.object, t.object);
    edges.push({ from: `clam:${t.subject}`, to: `clam:${t.object}`, label: t.predicate });
  }
  graphParts.clam = { nodes: [...nodes.values()], edges };
  syncGraph();
  const c = data.counts;
  if (c) $("#clam-counts").textContent = `volatile ${c.volatile} · semantic ${c.semantic} · episodic ${c.episodic} · triples ${c.triples}`;
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
  // A local clock only: slides the plot's time axis; it never asks the server for anything.
  setInterval(() => { drawThroughput(); expirePresence(); }, 1000);
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) connect(saved);
});
