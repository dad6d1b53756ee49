// Console-wide behaviour. Pages work without it: links are real hrefs and forms post normally.
(function () {
  "use strict";
  // Widths computed on the server travel as data attributes: a style="" attribute would break the CSP.
  function applyWidths(root) {
    root.querySelectorAll("[data-width-percent]").forEach(function (el) {
      el.style.width = el.dataset.widthPercent + "%";
    });
  }
  document.addEventListener("htmx:load", function (event) { applyWidths(event.detail.elt); });
  document.addEventListener("DOMContentLoaded", function () { applyWidths(document); });
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
