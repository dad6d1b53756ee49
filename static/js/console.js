// Console-wide behaviour. Pages work without it: links are real hrefs and forms post normally.
(function () {
  "use strict";
  // A swapped-in fragment that carries field errors brings the first one into view.
  document.addEventListener("htmx:afterSwap", function (event) {
    var error = event.detail.target.querySelector(".field-error, .notice");
    if (error) error.scrollIntoView({ block: "nearest" });
  });
})();
