// Run metric charts (uPlot). On a run's page (#run-live) live updates: metric events from the run's websocket
// extend the series, progress/status events update the status card; resumes with after=<last seq> like the
// episode viewer. On the compare page (#run-compare) one chart per metric with one series per run.
(function () {
  "use strict";
  if (typeof uPlot === "undefined") return;
  var PALETTE = ["#2f6fed", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285", "#e67700", "#495057"];

  // uPlot's own labels round a learning rate of 2e-4 to "0" and cut "30,000" to "0,000" at the axis' 50 px:
  // tick labels here stay within 7 characters (12.5M, 2e-4, 0.375); the legend shows the value logged (to 6 decimals).
  var COMPACT = new Intl.NumberFormat("en", { notation: "compact", maximumSignificantDigits: 4 });
  var FULL = new Intl.NumberFormat("en", { maximumFractionDigits: 6 });
  function exponent(v, digits) { return v.toExponential(digits).replace(/\.?0+e/, "e"); }
  function tick(v) {
    var a = Math.abs(v);
    if (v === 0) return "0";
    if (a >= 1e4) return COMPACT.format(v);
    if (a < 1e-3) return exponent(v, 2);
    return String(Number(v.toPrecision(4)));
  }
  var STEP_INCREMENTS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2500, 5e3, 1e4, 2e4, 25e3, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7];  // no step 2.5
  function axisWidth(u, values) {  // px: the longest label at about 7 px a character, beside the ticks
    var longest = (values || []).reduce(function (most, v) { return Math.max(most, String(v).length); }, 0);
    return Math.max(40, longest * 7 + 18);
  }
  function legendValue(u, v) {
    if (v == null) return "--";
    return v !== 0 && Math.abs(v) < 1e-3 ? exponent(v, 5) : FULL.format(v);
  }

  // data: [steps, values of series 1, ...]; labels: one per series. spanGaps joins a run's points across the
  // steps only another run logged (the server fills those with null).
  function plot(figure, data, labels) {
    var series = [{ label: "step" }].concat(labels.map(function (label, i) {
      return { label: label, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: true, value: legendValue };
    }));
    var opts = {
      width: Math.min(560, figure.parentElement.clientWidth - 20), height: 220, scales: { x: { time: false } }, series: series,
      axes: [{ incrs: STEP_INCREMENTS, values: function (u, splits) { return splits.map(tick); } },
             { values: function (u, splits) { return splits.map(tick); }, size: axisWidth }],
    };
    return new uPlot(opts, data, figure);
  }

  var compare = document.getElementById("run-compare");
  if (compare) {
    fetch(compare.dataset.metricsUrl, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (body) {
      compare.querySelectorAll("figure[data-metric]").forEach(function (figure) {
        var columns = body.metrics[figure.dataset.metric];
        if (columns) plot(figure, columns, body.labels);
      });
    });
    return;
  }

  var root = document.getElementById("run-live");
  if (!root) return;
  var charts = {};
  var data = {};

  // One heading per role or family: advsim's agent_loss and adversary_flip_rate under "agent" and "adversary",
  // eval_sim_asr_fresh under "eval_sim", an external trainer's train/loss under "train". Two-word prefixes are tried first, then one word among the names left; a
  // prefix heads a group when GROUP_MIN names share it. The rest stay first, in #charts, under no heading.
  var GROUP_MIN = 3;
  function groupsOf(names) {
    var groups = {};
    var left = names.slice();
    [2, 1].forEach(function (words) {
      function prefixOf(name) {  // the first `words` words before a further one, "_" or "/" apart (TRL's train/loss)
        var match = name.match(new RegExp("^(?:[^_/]+[_/]){" + words + "}(?=[^_/])"));
        return match ? match[0].slice(0, -1) : "";
      }
      var counts = {};
      left.forEach(function (name) { var p = prefixOf(name); if (p) counts[p] = (counts[p] || 0) + 1; });
      left = left.filter(function (name) {
        var p = prefixOf(name);
        if (!p || counts[p] < GROUP_MIN) return true;
        (groups[p] = groups[p] || []).push(name);
        return false;
      });
    });
    return { groups: groups, left: left };
  }

  // Moves every chart under its heading (creating or dropping headings); a moved figure keeps its canvas.
  function regroup() {
    var figures = {};
    root.querySelectorAll("figure[data-metric]").forEach(function (f) { figures[f.dataset.metric] = f; });
    var result = groupsOf(Object.keys(figures).sort());
    var ungrouped = document.getElementById("charts");
    result.left.forEach(function (name) { ungrouped.appendChild(figures[name]); });
    var previous = ungrouped;
    Object.keys(result.groups).sort().forEach(function (group) {
      var details = root.querySelector('details[data-group="' + CSS.escape(group) + '"]');
      if (!details) {
        details = document.createElement("details");
        details.className = "chart-group";
        details.dataset.group = group;
        details.open = true;
        details.innerHTML = '<summary></summary><div class="charts"></div>';
      }
      details.querySelector("summary").textContent = group + " (" + result.groups[group].length + ")";
      previous.after(details);
      previous = details;
      var box = details.querySelector(".charts");
      result.groups[group].forEach(function (name) { box.appendChild(figures[name]); });
    });
    root.querySelectorAll("details[data-group]").forEach(function (d) { if (!result.groups[d.dataset.group]) d.remove(); });
  }

  // Draws (or extends) a metric's chart; true when its figure is new, i.e. the headings may have to change.
  function draw(name) {
    var figure = root.querySelector('figure[data-metric="' + CSS.escape(name) + '"]');
    var created = !figure;
    if (!figure) {
      figure = document.createElement("figure");
      figure.className = "chart";
      figure.dataset.metric = name;
      var caption = document.createElement("figcaption");
      caption.textContent = name;
      figure.appendChild(caption);
      document.getElementById("charts").appendChild(figure);
      var empty = document.getElementById("no-metrics");
      if (empty) empty.remove();
    }
    if (charts[name]) charts[name].setData(data[name]);
    else charts[name] = plot(figure, data[name], [name]);
    return created;
  }

  fetch(root.dataset.metricsUrl, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (body) {
    Object.keys(body.metrics).forEach(function (name) { data[name] = body.metrics[name]; draw(name); });
    regroup();
  });

  if (!root.hasAttribute("ws-connect")) return;
  var lastSeq = Number(root.dataset.lastSeq || 0);
  var baseCreate = htmx.createWebSocket || function (url) { return new WebSocket(url, []); };
  htmx.createWebSocket = function (url) {
    var resumed = new URL(url);
    resumed.searchParams.set("after", String(lastSeq));
    return baseCreate(resumed.toString());
  };
  root.addEventListener("htmx:wsBeforeMessage", function (event) {
    event.preventDefault();
    var message;
    try { message = JSON.parse(event.detail.message); } catch (e) { return; }
    if (message.seq <= lastSeq) return;
    lastSeq = message.seq;
    var p = message.payload || {};
    if (message.kind === "metric" && p.name !== undefined) {
      var series = data[p.name] || (data[p.name] = [[], []]);
      series[0].push(p.step);
      series[1].push(p.value);
      if (draw(p.name)) regroup();
    } else if (message.kind === "checkpoint") {
      htmx.ajax("GET", root.dataset.statusUrl, { target: "#run-status", swap: "innerHTML" });  // its row comes out of band
    } else if (message.kind === "progress" || message.kind === "status") {
      if (p.progress !== undefined) {
        document.getElementById("run-progress").value = p.progress;
        document.getElementById("run-progress-text").textContent = Math.round(p.progress * 100) + "%";
      }
      if (p.status) document.getElementById("run-state").textContent = p.status;
      // A new status also changes the card's times, error and cancel button, and the checkpoints: the server renders
      // them again (the checkpoints out of band).
      if (message.kind === "status") htmx.ajax("GET", root.dataset.statusUrl, { target: "#run-status", swap: "innerHTML" });
    }
  });
})();
