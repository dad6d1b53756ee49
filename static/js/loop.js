// A loop's page: each event of the loop's live stream (/ws/loops/<id>/?after=<seq>) refreshes the status fragment at
// once; the fragment's own htmx polling is the fallback. The socket closes when the loop stops running.
(function () {
  "use strict";
  var root = document.getElementById("loop-live");
  if (!root || !root.getAttribute("data-ws") || !window.WebSocket) return;
  var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
  var socket = new WebSocket(scheme + window.location.host + root.getAttribute("data-ws"));
  var pending = false;
  socket.onmessage = function (message) {
    var event = JSON.parse(message.data);
    var bar = document.getElementById("loop-progress");
    if (bar && event.payload && typeof event.payload.progress === "number") bar.value = event.payload.progress;
    var note = document.getElementById("loop-message");
    if (note && event.payload && event.payload.message) note.textContent = event.payload.message;
    if (pending || !window.htmx) return;
    pending = true;
    window.setTimeout(function () {
      pending = false;
      window.htmx.ajax("GET", root.getAttribute("data-status-url"), { target: "#loop-status", swap: "innerHTML" });
    }, 300);
  };
})();
