// Episode viewer: j/k step navigation, #step-N deep links, and live spectating over the websocket.
//
// Live: the htmx websocket extension owns the connection and its reconnects; we wrap htmx.createWebSocket so
// each (re)connect asks for `after=<last seq received>`, and handle the JSON events ourselves (no swap). A step
// event queues that step; the queued steps' server-rendered fragments (escaped by the templates) are fetched
// as one range per round trip and inserted in order, once per index.
(function () {
  "use strict";
  var viewer = document.getElementById("viewer");
  if (!viewer) return;
  var timeline = document.getElementById("timeline");
  var stepsUrl = viewer.dataset.stepsUrl;

  function select(step, scroll) {
    timeline.querySelectorAll(".step.current").forEach(function (s) { s.classList.remove("current"); });
    step.classList.add("current");
    if (scroll !== false) step.scrollIntoView({ block: "nearest" });
    step.focus({ preventScroll: true });
    history.replaceState(null, "", "#step-" + step.dataset.index);
    var diagnoseStep = document.getElementById("diagnose-step");
    if (diagnoseStep) diagnoseStep.value = step.dataset.index;
  }

  function openHash() {
    var match = location.hash.match(/^#step-(\d+)$/);
    if (!match) return;
    var step = document.getElementById("step-" + match[1]);
    if (step) { select(step); step.scrollIntoView({ block: "start" }); return; }
    var url = new URL(location.href);
    if (url.searchParams.get("at") !== match[1]) { url.searchParams.set("at", match[1]); location.replace(url.toString()); }
  }
  window.addEventListener("hashchange", openHash);
  openHash();

  document.addEventListener("keydown", function (event) {
    if (event.target.closest("input, textarea, select, [contenteditable]") || event.metaKey || event.ctrlKey || event.altKey) return;
    if (event.key === "/") { event.preventDefault(); document.getElementById("episode-search-input").focus(); return; }
    if (event.key !== "j" && event.key !== "k") return;
    var steps = Array.prototype.slice.call(timeline.querySelectorAll(".step"));
    if (!steps.length) return;
    var i = steps.findIndex(function (s) { return s.classList.contains("current"); });
    i = i < 0 ? 0 : event.key === "j" ? Math.min(steps.length - 1, i + 1) : Math.max(0, i - 1);
    select(steps[i]);
  });

  if (!viewer.hasAttribute("ws-connect")) return;
  var lastSeq = Number(viewer.dataset.lastSeq || 0);
  var indicator = document.getElementById("live-indicator");

  function setLive(state, text) {
    if (!indicator) return;
    indicator.dataset.state = state;
    indicator.querySelector(".live-text").textContent = text;
  }

  var baseCreate = htmx.createWebSocket || function (url) { return new WebSocket(url, []); };
  htmx.createWebSocket = function (url) {
    var resumed = new URL(url);
    resumed.searchParams.set("after", String(lastSeq));
    setLive("connecting", "connecting…");
    var socket = baseCreate(resumed.toString());
    socket.addEventListener("open", function () { setLive("live", "live"); });
    socket.addEventListener("close", function () { if (indicator.dataset.state !== "ended") setLive("reconnecting", "reconnecting…"); });
    return socket;
  };

  // Steps that arrived but are not on the page yet; fetched as one range per round trip, so a fast rollout
  // costs a request per batch, not per step.
  var wanted = [];
  var busy = false;

  function insert(html) {
    var holder = document.createElement("div");
    holder.innerHTML = html;
    var follow = window.innerHeight + window.scrollY >= document.body.scrollHeight - 200;
    var later = timeline.querySelector(".more.later");
    var last = null;
    holder.querySelectorAll(".step").forEach(function (step) {
      if (document.getElementById(step.id)) return;
      timeline.insertBefore(step, later);
      htmx.process(step);
      step.classList.add("arrived");
      last = step;
    });
    if (last) {
      document.getElementById("episode-step-count").textContent = String(Number(last.dataset.index) + 1);
      if (follow) last.scrollIntoView({ block: "end" });
    }
  }

  function pump() {
    if (busy || !wanted.length) return;
    var start = Math.min.apply(null, wanted);
    var stop = Math.min(Math.max.apply(null, wanted) + 1, start + 200);
    wanted = wanted.filter(function (i) { return i >= stop; });
    busy = true;
    fetch(stepsUrl + "?start=" + start + "&stop=" + stop, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : ""; })
      .then(insert)
      .finally(function () { busy = false; pump(); });
  }

  function appendStep(index) {
    if (document.getElementById("step-" + index)) return;
    wanted.push(index);
    pump();
  }

  viewer.addEventListener("htmx:wsBeforeMessage", function (event) {
    event.preventDefault(); // JSON events, not HTML to swap
    var message;
    try { message = JSON.parse(event.detail.message); } catch (e) { return; }
    if (message.seq <= lastSeq) return;
    lastSeq = message.seq;
    viewer.dataset.lastSeq = String(lastSeq);
    if (message.kind === "step") appendStep(message.payload.index);
    if (message.kind === "status" && message.payload.status !== "running") {
      (function () {
        // The same words as the page's own tag (Episode.life_cycle), the reason beside it when it says more.
        var cycle = message.payload.life_cycle || message.payload.status, reason = message.payload.termination_reason;
        document.getElementById("episode-status").textContent = cycle + (reason && reason !== cycle ? " (" + reason + ")" : "");
        if (message.payload.composite !== undefined && message.payload.composite !== null) {
          document.getElementById("episode-composite").textContent = Number(message.payload.composite).toFixed(3);
        }
        setLive("ended", "ended");
      })();
    }
  });
})();
