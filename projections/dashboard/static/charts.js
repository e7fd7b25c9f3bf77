// HiveMem dashboard: how times are written and the two time-series charts (uPlot, vendored):
// throughput/lag of the envelope flow and the CAML reputation history. Loaded before app.js.
"use strict";

// ---- times: every time on the page carries its date, in the browser's time zone ---------------------
const pad2 = (n) => String(n).padStart(2, "0");
const dayOf = (d) => `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
const clockOf = (d, secs = true) => `${pad2(d.getHours())}:${pad2(d.getMinutes())}${secs ? `:${pad2(d.getSeconds())}` : ""}`;
// "2026-11-27 04:39:12" (local time); "—" for none.
function stamp(ms) {
  if (!ms) return "—";
  const d = new Date(ms);
  return `${dayOf(d)} ${clockOf(d)}`;
}
// The browser's offset from UTC, e.g. "UTC+01:00": the charts' time axes say which clock they use.
function zoneName(ms = Date.now()) {
  const off = -new Date(ms).getTimezoneOffset();
  return `UTC${off < 0 ? "−" : "+"}${pad2(Math.floor(Math.abs(off) / 60))}:${pad2(Math.abs(off) % 60)}`;
}

// ---- a time axis for uPlot (x in unix seconds) ---------------------------------------------------
const DAY_S = 86400;
// Tick steps in seconds, never below one: the labels show whole seconds, so no two ticks read the same.
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
  DAY_S, 2 * DAY_S, 7 * DAY_S, 14 * DAY_S, 30 * DAY_S, 91 * DAY_S, 182 * DAY_S, 365 * DAY_S];
function timeAxis() {
  const span = (u) => u.scales.x.max - u.scales.x.min;
  return {
    // Within a day: clock times, the date in the axis label; over more than a day: date and time per tick.
    values: (u, splits) => splits.map((s) => {
      const d = new Date(s * 1000);
      return span(u) > DAY_S ? `${dayOf(d)}\n${clockOf(d, false)}` : clockOf(d, span(u) > 900 ? false : true);
    }),
    label: (u) => {
      if (u.scales.x.min == null) return `time (${zoneName()})`;
      const a = dayOf(new Date(u.scales.x.min * 1000)), b = dayOf(new Date(u.scales.x.max * 1000));
      if (span(u) > DAY_S) return `date and time (${zoneName()})`;
      return `time on ${a === b ? a : `${a} – ${b}`} (${zoneName()})`;
    },
    incrs: TIME_STEPS, labelSize: 22, size: 46, space: 70, grid: { stroke: "#eef0f4" }, ticks: { stroke: "#e1e4ea" },
  };
}

// 1, 2, 5, 10, ...: whole numbers on count axes (envelopes, records) and no "0.5 records".
const WHOLE = [];
for (let p = 1; p <= 1e9; p *= 10) WHOLE.push(p, 2 * p, 5 * p);
const grouped = (v) => (v == null ? "—" : Number(v).toLocaleString("en-US", { maximumFractionDigits: 3 }));
// A count axis starting a little below 0, so a line at 0 is drawn above the axis, not on it.
const countRange = (u, lo, hi) => { const top = Math.max(1, hi || 0) * 1.15; return [-top * 0.08, top]; };
const nonNegative = (u, splits) => splits.map((v) => (v < 0 ? "" : grouped(v)));

// A legend value: at the cursor, or the latest value while the cursor is off the chart.
function latest(arr) {
  for (let i = arr.length - 1; i >= 0; i -= 1) if (arr[i] != null) return arr[i];
  return null;
}
const legendValue = (fmt) => (u, v, si, idx) => {
  const x = idx == null ? latest(u.data[si]) : v;
  return x == null ? "—" : fmt(x);
};
const timeSeries = { label: "time", value: legendValue((v) => stamp(v * 1000)) };

// A uPlot chart that follows its box's width.
function responsive(box, opts, data) {
  const width = () => Math.max(280, box.clientWidth);
  const u = new uPlot({ ...opts, width: width() }, data, box);
  u.resized = new ResizeObserver(() => {
    if (Math.abs(u.width - width()) > 2) u.setSize({ width: width(), height: opts.height });
  });
  u.resized.observe(box);
  return u;
}

function dropChart(u) {
  if (!u) return;
  u.resized.disconnect();
  u.destroy();
}

// ---- throughput (envelopes/s) and lag (records) over the last WINDOW_S seconds -----------------------
const THROUGHPUT = "#3b6fd8", LAG = "#e08a2c";

function throughputChart(box) {
  return responsive(box, {
    height: 230,
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    scales: { x: { time: true }, rate: { range: countRange }, lag: { range: countRange } },
    series: [
      timeSeries,
      { label: "throughput", scale: "rate", stroke: THROUGHPUT, width: 2, fill: "rgba(59,111,216,0.10)",
        value: legendValue((v) => `${grouped(v)} envelopes/s`) },
      // Drawn over the throughput, dashed and wider: at 0 both show, orange dashes on the blue line.
      { label: "lag", scale: "lag", stroke: LAG, width: 3, dash: [8, 5],
        value: legendValue((v) => `${grouped(v)} records`) },
    ],
    axes: [
      timeAxis(),
      { scale: "rate", label: "throughput (envelopes/s)", labelSize: 22, incrs: WHOLE, values: nonNegative,
        stroke: THROUGHPUT, grid: { stroke: "#eef0f4" }, size: 50 },
      { scale: "lag", side: 1, label: "lag (records)", labelSize: 22, incrs: WHOLE, values: nonNegative,
        stroke: LAG, grid: { show: false }, size: 50 },
    ],
  }, [[], [], []]);
}

// ---- reputation history: one stepped line per claw (the score holds until its next change) -----------
const PALETTE = ["#3b6fd8", "#1f9d55", "#d64545", "#b7791f", "#805ad5", "#2c7a7b", "#d53f8c", "#4a5568"];
const MAX_REP_LINES = PALETTE.length;

// history [{clawId, at (ms), score}] oldest first -> {claws, data} for uPlot, each line carried on to `now`.
function reputationSeries(history, now = Date.now()) {
  const last = new Map();
  for (const e of history) last.set(e.clawId, e.at);
  const claws = [...last.keys()].sort((a, b) => last.get(b) - last.get(a)).slice(0, MAX_REP_LINES).sort();
  const xs = [...new Set(history.map((e) => e.at / 1000))].sort((a, b) => a - b);
  if (xs.length && now / 1000 > xs[xs.length - 1]) xs.push(now / 1000);
  const index = new Map(xs.map((x, i) => [x, i]));
  const events = [];  // per line: the indexes where the claw's score changed (drawn as points)
  const lines = claws.map((claw) => {
    const at = new Array(xs.length).fill(undefined);
    for (const e of history) if (e.clawId === claw) at[index.get(e.at / 1000)] = e.score;
    events.push(at.flatMap((v, i) => (v === undefined ? [] : [i])));
    let held = null;
    return at.map((v) => (held = v === undefined ? held : v));  // carry the last score forward
  });
  return { claws, events, hidden: last.size - claws.length, data: [xs, ...lines] };
}

function scoreRange(u, lo, hi) {
  if (lo == null) return [-1, 1];
  const pad = Math.max(0.5, (hi - lo) * 0.12);
  return [lo - pad, hi + pad];
}

// A new chart when the set of claws changed, else the same one with new data.
function reputationChart(box, old, { claws, events, data }) {
  if (old && old.claws.join("\n") === claws.join("\n")) {
    old.marks.events = events;
    old.setData(data);
    return old;
  }
  dropChart(old);
  const marks = { events };  // read at each draw: setData above brings new indexes
  const u = responsive(box, {
    height: 220,
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    scales: { x: { time: true }, y: { range: scoreRange } },
    series: [
      timeSeries,
      ...claws.map((claw, i) => ({ label: claw, stroke: PALETTE[i % PALETTE.length], width: 2,
        paths: uPlot.paths.stepped({ align: 1 }),
        points: { show: true, size: 6, filter: () => marks.events[i] },
        value: legendValue((v) => v.toFixed(2)) })),
    ],
    axes: [timeAxis(), { label: "reputation (score)", labelSize: 22, size: 50, grid: { stroke: "#eef0f4" } }],
  }, data);
  u.claws = claws;
  u.marks = marks;
  return u;
}
