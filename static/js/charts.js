// Run metric charts (uPlot) with live updates: metric events from the run's websocket extend the series,
// progress/status events update the status card. Resumes with after=<last seq> like the episode viewer.
(function () {
  "use strict";
  var root = document.getElementById("run-live");
  if (!root || typeof uPlot === "undefined") return;
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
    var opts = { width: Math.min(560, figure.parentElement.clientWidth - 20), height: 220, scales: { x: { time: false } },
                 series: [{ label: "step" }, { label: name, stroke: "#2f6fed", width: 1.5 }] };
    charts[name] = new uPlot(opts, data[name], figure);
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
