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
  // A swapped-in fragment that carries field errors brings the first one into view.
  document.addEventListener("htmx:afterSwap", function (event) {
    var error = event.detail.target.querySelector(".field-error, .notice");
    if (error) error.scrollIntoView({ block: "nearest" });
  });
})();
