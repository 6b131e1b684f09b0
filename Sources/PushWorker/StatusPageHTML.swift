/// The status page's HTML, CSS and script, served at `GET /` (all of it from pushworker: no CDN, no outside
/// fetch, works air-gapped). The script fetches `/status.json` every sample interval and draws the
/// history with dygraphs (`/static/dygraph.min.js`, Debian `libjs-dygraphs`); when that library is
/// missing it shows each history as a table of its latest rows, with a note. Every value is inserted as
/// text (`textContent`), never as markup. After drawing, each plot's element carries `data-points` (the
/// rows plotted) and `data-series` (the series), which the browser test reads. Under the group table, each
/// raised group balance flag (``GroupBalance``) is a banner with its sentence (`data-flag`: its kind).
enum StatusPageHTML {
    /// The page.
    static let page = #"""
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pushworker status</title>
<link rel="stylesheet" href="/static/dygraph.min.css">
<style>
body { font-family: system-ui, sans-serif; margin: 1em 2em; color: #222; background: #fafafa; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
h2 { font-size: 1.1em; margin: 1.2em 0 0.4em; border-bottom: 1px solid #ccc; }
.sub { color: #666; font-size: 0.9em; }
.banner { background: #fff3cd; border: 1px solid #e0c36a; padding: 0.5em 0.8em; margin: 0.6em 0; }
.problem { background: #f8d7da; border: 1px solid #e2a0a7; padding: 0.5em 0.8em; margin: 0.6em 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(440px, 1fr)); gap: 1em; }
.card { background: #fff; border: 1px solid #ddd; padding: 0.5em; }
.card h3 { font-size: 0.95em; margin: 0 0 0.3em; }
.plot { width: 100%; height: 200px; overflow: auto; }
.legend { font-size: 0.8em; min-height: 1.2em; }
table { border-collapse: collapse; font-size: 0.85em; background: #fff; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.hidden { display: none; }
</style>
</head>
<body>
<h1>pushworker status</h1>
<div class="sub" id="identity">loading /status.json …</div>
<div class="banner hidden" id="waiting"></div>
<div class="problem hidden" id="problem"></div>
<div class="banner hidden" id="noplots">The plotting library (Debian package <code>libjs-dygraphs</code>) was not found
at <code id="plotpath"></code>, so each history is shown as a table of its latest samples. Install it
(<code>apt-get install libjs-dygraphs</code>) or point <code>statusPage.dygraphsPath</code> at its files.</div>

<h2>Group</h2>
<table id="members"><thead><tr><th>host</th><th>instance</th><th>member id</th><th>partitions</th><th>records/s</th>
<th>results/s</th><th>failed/s</th><th>running</th><th>waiting</th><th>results waiting</th><th>lag</th><th>last seen</th></tr></thead>
<tbody></tbody></table>
<div id="balance"></div>

<h2>This member: history</h2>
<div class="grid">
<div class="card"><h3>Records/s taken</h3><div class="plot" id="plot-records"></div><div class="legend" id="plot-records-legend"></div></div>
<div class="card"><h3>Results/s by type and outcome</h3><div class="plot" id="plot-results"></div><div class="legend" id="plot-results-legend"></div></div>
<div class="card"><h3>Worker duration percentiles by type (s)</h3><div class="plot" id="plot-durations"></div><div class="legend" id="plot-durations-legend"></div></div>
<div class="card"><h3>Consumer lag per partition</h3><div class="plot" id="plot-lag"></div><div class="legend" id="plot-lag-legend"></div></div>
<div class="card"><h3>Jobs running and waiting by type</h3><div class="plot" id="plot-jobs"></div><div class="legend" id="plot-jobs-legend"></div></div>
<div class="card"><h3>Results waiting for delivery</h3><div class="plot" id="plot-waiting"></div><div class="legend" id="plot-waiting-legend"></div></div>
<div class="card"><h3>Dead letters and rebalances (since start)</h3><div class="plot" id="plot-events"></div><div class="legend" id="plot-events-legend"></div></div>
</div>

<h2>Jobs now</h2>
<table id="jobs"><thead><tr><th>type</th><th>running</th><th>waiting</th><th>oldest running (s)</th></tr></thead><tbody></tbody></table>

<h2>Assignment</h2>
<div id="assignment"></div>

<h2>Recent failed results</h2>
<table id="failures"><thead><tr><th>time</th><th>messageId</th><th>type</th><th>reason</th><th>detail</th><th>topic</th>
<th>partition</th><th>offset</th><th>will retry</th></tr></thead><tbody></tbody></table>

<script>
"use strict";
var graphs = {};
var hasPlots = false;

function el(tag, text, cls) {
  var node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
function num(value, digits) {
  if (value === null || value === undefined) return "";
  return Number(value).toFixed(digits === undefined ? 1 : digits);
}
function fillTable(id, rows) {
  var body = document.querySelector("#" + id + " tbody");
  body.replaceChildren();
  rows.forEach(function (cells) {
    var tr = document.createElement("tr");
    cells.forEach(function (cell) {
      var numeric = typeof cell === "number";
      tr.appendChild(el("td", numeric ? num(cell, Number.isInteger(cell) ? 0 : 2) : cell, numeric ? "num" : ""));
    });
    body.appendChild(tr);
  });
}
function keysOf(samples, field) {
  var keys = {};
  samples.forEach(function (s) { Object.keys(s[field] || {}).forEach(function (k) { keys[k] = true; }); });
  return Object.keys(keys).sort();
}
// columns: [{label, value(sample) -> number|null}]
function draw(id, samples, columns) {
  var div = document.getElementById(id);
  var rows = samples.map(function (s) {
    return [new Date(s.t)].concat(columns.map(function (c) { var v = c.value(s); return v === undefined ? null : v; }));
  });
  if (columns.length === 0 || rows.length === 0) {
    div.replaceChildren(el("div", "no data yet", "sub"));
    div.setAttribute("data-points", "0");
    div.setAttribute("data-series", String(columns.length));
    return;
  }
  var labels = ["time"].concat(columns.map(function (c) { return c.label; }));
  if (hasPlots) {
    var done = function (g) {
      div.setAttribute("data-points", String(g.numRows()));
      div.setAttribute("data-series", String(g.numColumns() - 1));
    };
    var old = graphs[id];
    if (old && old.labelsKey === labels.join("\u0001")) {
      old.graph.updateOptions({ file: rows });
    } else {
      if (old) old.graph.destroy();
      div.replaceChildren();
      var graph = new Dygraph(div, rows, { labels: labels, legend: "always", labelsSeparateLines: false,
        labelsDiv: document.getElementById(id + "-legend"), connectSeparatedPoints: false, drawPoints: true, pointSize: 1.5, drawCallback: done, axes: { x: { axisLabelWidth: 80 }, y: { axisLabelWidth: 60 } } });
      graphs[id] = { graph: graph, labelsKey: labels.join("\u0001") };
    }
  } else {
    var table = el("table");
    var head = document.createElement("tr");
    labels.forEach(function (l) { head.appendChild(el("th", l)); });
    table.appendChild(head);
    rows.slice(-10).reverse().forEach(function (row) {
      var tr = document.createElement("tr");
      tr.appendChild(el("td", row[0].toLocaleTimeString()));
      row.slice(1).forEach(function (v) { tr.appendChild(el("td", num(v, 2), "num")); });
      table.appendChild(tr);
    });
    div.replaceChildren(table);
    div.setAttribute("data-points", "0");
    div.setAttribute("data-fallback", "table");
    div.setAttribute("data-series", String(columns.length));
  }
}
function sum(object) {
  return Object.keys(object || {}).reduce(function (a, k) { return a + object[k]; }, 0);
}
// One banner per group balance flag (idle member, surplus members, skew), then the partition counts.
function renderBalance(balance) {
  var box = document.getElementById("balance");
  box.replaceChildren();
  if (!balance) return;
  var flags = balance.flags || [];
  flags.forEach(function (f) {
    var line = el("div", f.message, "banner");
    line.setAttribute("data-flag", f.kind);
    box.appendChild(line);
  });
  var counts = Object.keys(balance.partitions || {}).sort().map(function (t) { return t + " " + balance.partitions[t]; });
  box.appendChild(el("div", "partitions per topic: " + (counts.length ? counts.join(", ") : "unknown yet") + " · input lag " +
    num(balance.inputLag, 0) + (flags.length ? "" : " · balanced: no flag raised"), "sub"));
  box.setAttribute("data-flags", String(flags.length));
}
function render(doc) {
  hasPlots = doc.plots.available && typeof Dygraph !== "undefined";
  var me = doc.member;
  document.getElementById("identity").textContent = "group " + doc.group.groupId + " · member " + me.instanceId +
    " (" + (me.memberId || "not joined yet") + ") · pushworker " + me.version + " · updated " +
    new Date(doc.generatedAtMs).toLocaleTimeString() + " · refreshes every " + doc.sampleIntervalSeconds + " s";
  var waiting = document.getElementById("waiting");
  if (doc.waitingForPartitionsSeconds !== null && doc.waitingForPartitionsSeconds !== undefined) {
    waiting.textContent = "waiting for partitions since " + Math.round(doc.waitingForPartitionsSeconds) + " s";
    waiting.classList.remove("hidden");
  } else {
    waiting.classList.add("hidden");
  }
  var problem = document.getElementById("problem");
  problem.textContent = doc.group.statusTopicProblem || "";
  problem.classList.toggle("hidden", !doc.group.statusTopicProblem);
  document.getElementById("plotpath").textContent = doc.plots.path;
  document.getElementById("noplots").classList.toggle("hidden", hasPlots);

  var members = doc.group.members.map(function (m) {
    var s = m.status;
    return [s.host + (m.isSelf ? " (this page)" : ""), s.instanceId, s.memberId || "", s.assignment.length, s.recordsPerSecond,
      s.resultsPerSecond, s.failedPerSecond, s.jobsRunning, s.jobsWaiting, s.resultsWaiting, s.lag, num(m.lastSeenSecondsAgo, 1) + " s ago"];
  });
  var t = doc.group.totals;
  members.push(["total: " + t.members + " members", "", "", t.assignedPartitions, t.recordsPerSecond, t.resultsPerSecond,
    t.failedPerSecond, t.jobsRunning, t.jobsWaiting, t.resultsWaiting, t.lag, ""]);
  fillTable("members", members);
  renderBalance(doc.group.balance);

  var samples = doc.samples;
  draw("plot-records", samples, [{ label: "records/s", value: function (s) { return s.recordsPerSecond; } },
    { label: "results/s", value: function (s) { return sum(s.resultsPerSecond); } }]);
  draw("plot-results", samples, keysOf(samples, "resultsPerSecond").map(function (k) {
    return { label: k, value: function (s) { return (s.resultsPerSecond || {})[k]; } };
  }));
  var durations = [];
  keysOf(samples, "durationSeconds").forEach(function (k) {
    ["p50", "p90", "p99"].forEach(function (p) {
      durations.push({ label: k + " " + p, value: function (s) { var d = (s.durationSeconds || {})[k]; return d ? d[p] : null; } });
    });
  });
  draw("plot-durations", samples, durations);
  draw("plot-lag", samples, keysOf(samples, "lag").map(function (k) {
    return { label: k, value: function (s) { return (s.lag || {})[k]; } };
  }));
  var jobs = [];
  keysOf(samples, "running").forEach(function (k) {
    jobs.push({ label: k + " running", value: function (s) { return (s.running || {})[k] || 0; } });
  });
  keysOf(samples, "waiting").forEach(function (k) {
    jobs.push({ label: k + " waiting", value: function (s) { return (s.waiting || {})[k] || 0; } });
  });
  jobs.push({ label: "oldest running (s)", value: function (s) { return s.oldestRunningSeconds; } });
  draw("plot-jobs", samples, jobs);
  draw("plot-waiting", samples, [{ label: "results waiting", value: function (s) { return s.resultsWaiting; } }]);
  draw("plot-events", samples, [{ label: "dead letters", value: function (s) { return s.deadLetters; } },
    { label: "rebalances", value: function (s) { return s.rebalances; } }]);

  fillTable("jobs", doc.jobs.map(function (j) {
    return [j.type, j.running, j.waiting, j.oldestRunningSeconds === null || j.oldestRunningSeconds === undefined ? "" : j.oldestRunningSeconds];
  }));
  document.getElementById("assignment").textContent = me.assignment.length ? me.assignment.join(", ") : "(none)";
  fillTable("failures", doc.failures.map(function (f) {
    return [new Date(f.atMs).toLocaleTimeString(), f.messageId, f.type || "", f.reason || "", f.detail || "", f.topic,
      String(f.partition), String(f.offset), f.willRetry ? "yes" : "no"];
  }));
  document.body.setAttribute("data-rendered", String(doc.generatedAtMs));
}
var refreshMs = 2000;
function refresh() {
  fetch("/status.json", { cache: "no-store" }).then(function (response) {
    if (!response.ok) throw new Error("HTTP " + response.status);
    return response.json();
  }).then(function (doc) {
    refreshMs = Math.max(500, doc.sampleIntervalSeconds * 1000);
    render(doc);
  }).catch(function (error) {
    var problem = document.getElementById("problem");
    problem.textContent = "cannot load /status.json: " + error.message;
    problem.classList.remove("hidden");
  }).finally(function () { setTimeout(refresh, refreshMs); });
}
</script>
<script src="/static/dygraph.min.js" onerror="refresh()" onload="refresh()"></script>
</body>
</html>
"""#
}
