// Console-wide behaviour. Pages work without it: links are real hrefs and forms post normally.
(function () {
  "use strict";
  // Live pages reconnect within a few seconds of the server coming back. The ws extension's default
  // ("full-jitter") doubles its ceiling up to 64 s, so after a restart of some seconds a spectator could wait a
  // minute with nothing wrong; this keeps the jitter (no reconnect storm) but caps the wait at 5 s.
  if (window.htmx) {
    htmx.config.wsReconnectDelay = function (retries) {
      var ceiling = Math.min(5000, 500 * Math.pow(2, retries));
      return ceiling * (0.5 + Math.random() / 2);
    };
  }
  // Widths computed on the server travel as data attributes: a style="" attribute would break the CSP.
  // Watched for, as steps arrive by htmx swaps and by the viewer's live inserts alike.
  function applyWidths(root) {
    if (root.matches && root.matches("[data-width-percent]")) root.style.width = root.dataset.widthPercent + "%";
    root.querySelectorAll("[data-width-percent]").forEach(function (el) {
      el.style.width = el.dataset.widthPercent + "%";
    });
  }
  new MutationObserver(function (mutations) {
    mutations.forEach(function (mutation) {
      mutation.addedNodes.forEach(function (node) { if (node.nodeType === 1) applyWidths(node); });
    });
  }).observe(document.documentElement, { childList: true, subtree: true });
  document.addEventListener("DOMContentLoaded", function () { applyWidths(document); });
  // A search box with data-filters="<select id>" narrows that select's options (and their groups) to those whose
  // text holds every word typed, and selects the first match when the chosen one is filtered out.
  document.addEventListener("input", function (event) {
    var box = event.target;
    if (!box.dataset || !box.dataset.filters) return;
    var select = document.getElementById(box.dataset.filters);
    if (!select) return;
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    var first = null;
    Array.prototype.forEach.call(select.options, function (option) {
      var text = (option.textContent + " " + (option.parentNode.label || "")).toLowerCase();
      var match = words.every(function (word) { return text.indexOf(word) >= 0; });
      option.hidden = !match;
      option.disabled = !match;
      if (match) { shown += 1; if (!first) first = option; }
    });
    Array.prototype.forEach.call(select.querySelectorAll("optgroup"), function (group) {
      group.hidden = !Array.prototype.some.call(group.children, function (option) { return !option.hidden; });
    });
    if (select.selectedOptions.length && select.selectedOptions[0].hidden && first) first.selected = true;
    var count = document.getElementById(box.id + "-count");
    if (count) count.textContent = words.length ? shown + " of " + select.options.length + " tasks" : "";
  });
  // Forms that ask before an irreversible step carry the question in data-confirm (no inline onsubmit handler).
  document.addEventListener("submit", function (event) {
    var question = event.target.dataset && event.target.dataset.confirm;
    if (question && !window.confirm(question)) event.preventDefault();
  }, true);
  // Upload forms (form[data-upload="<result id>"]): a file dragged onto the drop zone lands in its file input, and the
  // form goes by XHR so its progress shows; the server's fragment (the job's status, or the refusal) replaces the
  // result element. Without JavaScript the form posts as it is and the browser goes to the job's page.
  function showFileName(input) {
    var label = document.getElementById(input.id + "-name");
    if (label) label.textContent = input.files.length ? input.files[0].name + " (" + megabytes(input.files[0].size) + ")" : "";
  }
  function megabytes(bytes) { return (bytes / 1048576).toFixed(bytes < 1048576 ? 2 : 1) + " MB"; }
  document.addEventListener("change", function (event) {
    if (event.target.closest && event.target.closest("[data-dropzone]")) showFileName(event.target);
  });
  ["dragenter", "dragover"].forEach(function (name) {
    document.addEventListener(name, function (event) {
      var zone = event.target.closest && event.target.closest("[data-dropzone]");
      if (!zone) return;
      event.preventDefault();
      zone.classList.add("dragging");
    });
  });
  document.addEventListener("dragleave", function (event) {
    var zone = event.target.closest && event.target.closest("[data-dropzone]");
    if (zone && !zone.contains(event.relatedTarget)) zone.classList.remove("dragging");
  });
  document.addEventListener("drop", function (event) {
    var zone = event.target.closest && event.target.closest("[data-dropzone]");
    if (!zone) return;
    event.preventDefault();
    zone.classList.remove("dragging");
    var input = document.getElementById(zone.dataset.dropzone);
    if (input && event.dataTransfer && event.dataTransfer.files.length) {
      input.files = event.dataTransfer.files;
      showFileName(input);
    }
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.dataset || !form.dataset.upload || event.defaultPrevented || !window.FormData) return;
    event.preventDefault();
    var box = form.querySelector(".upload-progress");
    var bar = box && box.querySelector("progress");
    var text = box && box.querySelector("[aria-live]");
    var button = form.querySelector("button[type=submit]");
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("HX-Request", "true"); // the server answers with the fragment, as to htmx
    xhr.upload.addEventListener("progress", function (e) {
      if (!e.lengthComputable || !bar) return;
      bar.value = Math.round((100 * e.loaded) / e.total);
      text.textContent = megabytes(e.loaded) + " of " + megabytes(e.total) + " sent (" + bar.value + "%)";
    });
    xhr.upload.addEventListener("load", function () {
      if (text) text.textContent = "Sent; the server is checking the file…";
    });
    xhr.addEventListener("load", function () {
      if (button) button.disabled = false;
      var old = document.getElementById(form.dataset.upload);
      var holder = document.createElement("div");
      holder.innerHTML = xhr.responseText;
      var fresh = holder.querySelector("#" + form.dataset.upload);
      if (!fresh) {
        if (text) text.textContent = "The server answered " + xhr.status + " without a result; reload the page.";
        return;
      }
      old.replaceWith(fresh);
      if (text) text.textContent = xhr.status < 300 ? "Uploaded." : "Refused (" + xhr.status + ").";
      if (window.htmx) htmx.process(fresh); // the job's status polls until the import ends
      fresh.scrollIntoView({ block: "nearest" });
    });
    xhr.addEventListener("error", function () {
      if (button) button.disabled = false;
      if (text) text.textContent = "The upload failed: the connection to the server was lost.";
    });
    if (box) box.hidden = false;
    if (bar) bar.value = 0;
    if (text) text.textContent = "Starting the upload…";
    if (button) button.disabled = true;
    xhr.send(new FormData(form));
  });
  // A swapped-in fragment that carries field errors brings the first one into view.
  document.addEventListener("htmx:afterSwap", function (event) {
    var error = event.detail.target.querySelector(".field-error, .notice");
    if (error) error.scrollIntoView({ block: "nearest" });
  });
})();
