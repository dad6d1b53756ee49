// The diagnosis job form's "all" box: checks or clears every episode box of its table. Delegated from the
// document so it keeps working after htmx swaps the form in; without JS each box is ticked by hand.
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!box.matches || !box.matches("input[data-select-all]")) return;
    var table = box.closest("table");
    var name = box.getAttribute("data-select-all");
    table.querySelectorAll('input[type="checkbox"][name="' + name + '"]').forEach(function (other) {
      other.checked = box.checked;
    });
  });
})();
