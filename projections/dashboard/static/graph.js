// HiveMem dashboard: the graph panel, drawn by vis-network (vendored). Fed by app.js with two parts:
// "base" (claws, proposals, facts, KMMS entities) and "clam" (CLAM nodes and triples). Loaded before app.js.
"use strict";

let network = null;
let graphNodes = null, graphEdges = null;
let graphTouched = false;  // the user zoomed or panned: leave the view alone until a double click
const graphParts = { base: { nodes: [], edges: [] }, clam: { nodes: [], edges: [] } };
// Labels below the shape (dot, diamond, hexagon) get a white back; labels inside (box, ellipse) a light fill.
const GROUPS = {
  claw: { color: "#3b6fd8", shape: "dot" }, fact: { color: "#1f9d55", shape: "diamond" },
  proposal: { color: { background: "#f6e3bd", border: "#b7791f" }, shape: "box", font: { background: "none" } },
  entity: { color: { background: "#e4dbf7", border: "#805ad5" }, shape: "ellipse", font: { background: "none" } },
  clam: { color: "#2c7a7b", shape: "hexagon" }, "clam-volatile": { color: "#9fd3d4", shape: "hexagon" },
  "clam-semantic": { color: "#2c7a7b", shape: "hexagon" }, "clam-episodic": { color: "#4fa3a5", shape: "hexagon" },
};
const LABEL_BACK = "rgba(255,255,255,0.85)";  // labels stay legible where they cross an edge

// The whole graph in view with a margin (a fit alone puts the outermost labels on the border).
function fitGraph() {
  if (!network || graphTouched || !graphNodes.length) return;
  network.fit({ animation: false });
  network.moveTo({ scale: network.getScale() * 0.9, animation: false });
}

function ensureNetwork() {
  if (network || typeof vis === "undefined") return network;
  graphNodes = new vis.DataSet();
  graphEdges = new vis.DataSet();
  network = new vis.Network($("#graph"), { nodes: graphNodes, edges: graphEdges }, {
    groups: Object.fromEntries(Object.entries(GROUPS).map(([k, v]) => [k, { ...v }])),
    nodes: { size: 14, font: { size: 14, color: "#1d2330", background: LABEL_BACK } },
    edges: { arrows: { to: { scaleFactor: 0.6 } }, color: { color: "#9aa3b5", highlight: "#3b6fd8" }, width: 1.2,
      font: { size: 12, color: "#4a5568", align: "horizontal", background: "#ffffff", strokeWidth: 0 },
      smooth: { enabled: true, type: "continuous", roundness: 0.4 } },
    physics: { solver: "forceAtlas2Based", stabilization: { iterations: 300 },
      forceAtlas2Based: { gravitationalConstant: -80, springLength: 130, springConstant: 0.05, avoidOverlap: 1 } },
    layout: { randomSeed: 7 },
  });
  network.on("stabilized", fitGraph);
  network.on("zoom", () => { graphTouched = true; });
  network.on("dragEnd", (p) => { if (!p.nodes.length) graphTouched = true; });
  network.on("doubleClick", () => { graphTouched = false; fitGraph(); });
  new ResizeObserver(() => fitGraph()).observe($("#graph"));
  return network;
}

// Edges between the same two nodes (a claw that proposed and voted) bend apart, so their labels do not overlap.
function spreadParallel(edges) {
  const pairs = new Map();
  for (const e of edges) {
    const key = [e.from, e.to].sort().join("\n");
    (pairs.get(key) || pairs.set(key, []).get(key)).push(e);
  }
  for (const group of pairs.values()) {
    if (group.length < 2) continue;
    group.forEach((e, i) => {
      const bend = 0.35 * (i - (group.length - 1) / 2);
      const flip = e.from > e.to ? -1 : 1;  // same side whichever way the edge points
      e.smooth = { enabled: true, type: bend * flip >= 0 ? "curvedCW" : "curvedCCW", roundness: Math.abs(bend) };
    });
  }
  return edges;
}

// Diff into the DataSets, so a push moves only what changed instead of re-laying out the graph.
function syncGraph() {
  if (!ensureNetwork()) return;
  const nodes = [...graphParts.base.nodes, ...graphParts.clam.nodes];
  const edges = spreadParallel([...new Map([...graphParts.base.edges, ...graphParts.clam.edges]
    .map((e) => [`${e.from}>${e.to}>${e.label || ""}`, e])).entries()].map(([id, e]) => ({ id, ...e })));
  const keepN = new Set(nodes.map((n) => n.id)), keepE = new Set(edges.map((e) => e.id));
  graphNodes.remove(graphNodes.getIds().filter((id) => !keepN.has(id)));
  graphEdges.remove(graphEdges.getIds().filter((id) => !keepE.has(id)));
  graphNodes.update(nodes);
  graphEdges.update(edges);
  document.querySelector("#graph").classList.toggle("empty", !nodes.length);  // no empty canvas: a line says so
}

// CLAM nodes (grouped volatile / semantic / episodic) and triples as nodes and edges of the "clam" part.
function clamGraph(data) {
  const nodes = new Map();
  const add = (id, label) => {
    if (!nodes.has(`clam:${id}`)) nodes.set(`clam:${id}`, { id: `clam:${id}`, label: String(label ?? id).slice(0, 60), group: "clam" });
  };
  for (const n of data.nodes || []) {
    const id = n.id ?? n.conceptId ?? n.nodeId;
    if (id !== undefined) add(id, n.label ?? n.name ?? n.text ?? id);
    if (id !== undefined && n.group) nodes.get(`clam:${id}`).group = `clam-${n.group}`;
  }
  const edges = [];
  for (const t of data.triples || []) {
    add(t.subject, t.subject);
    add(t.object, t.object);
    edges.push({ from: `clam:${t.subject}`, to: `clam:${t.object}`, label: t.predicate });
  }
  return { nodes: [...nodes.values()], edges };
}
