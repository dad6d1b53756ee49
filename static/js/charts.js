// Run metric charts (uPlot). On a run's page (#run-live) live updates: metric events from the run's websocket
// extend the series, progress/status events update the status card; resumes with after=<last seq> like the
// episode viewer. On the compare page (#run-compare) one chart per metric with one series per run.
(function () {
  "use strict";
  if (typeof uPlot === "undefined") return;
  var PALETTE = ["#2f6fed", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285", "#e67700", "#495057"];

  // data: [steps, values of series 1, ...]; labels: one per series. spanGaps joins a run's points across the
  // steps only another run logged (the server fills those with null).
  function plot(figure, data, labels) {
    var series = [{ label: "step" }].concat(labels.map(function (label, i) {
      return { label: label, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: true };
    }));
    var opts = { width: Math.min(560, figure.parentElement.clientWidth - 20), height: 220, scales: { x: { time: false } }, series: series };
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

  function draw(name) {
    var figure = root.querySelector('figure[data-metric="' + CSS.escape(name) + '"]');
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
    if (charts[name]) { charts[name].setData(data[name]); return; }
    charts[name] = plot(figure, data[name], [name]);
  }

  fetch(root.dataset.metricsUrl, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (body) {
    Object.keys(body.metrics).forEach(function (name) { data[name] = body.metrics[name]; draw(name); });
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
      draw(p.name);
    } else if (message.kind === "progress" || message.kind === "status") {
      if (p.progress !== undefined) {
        document.getElementById("run-progress").value = p.progress;
        document.getElementById("run-progress-text").textContent = Math.round(p.progress * 100) + "%";
      }
      if (p.status) document.getElementById("run-state").textContent = p.status;
    }
  });
})();
