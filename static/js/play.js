// The play page's keyboard shortcuts, declared by the environment and rendered into the page as data-key
// attributes: a panel's key submits its open form (one charged tool call, like a click), a tool's key opens
// that tool's form and focuses its first field, "?" shows or hides the list. Keys are ignored while a field
// has the focus (typing a SKU must not open panels) and with a modifier held (browser shortcuts stay).
(function () {
  "use strict";
  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var area = document.getElementById("play-area");
    if (!area) return;
    if (event.key === "Escape") {
      if (typing(event.target)) event.target.blur();
      var open = document.getElementById("shortcut-help");
      if (open) open.open = false;
      return;
    }
    if (typing(event.target)) return;
    if (event.key === "?") {
      var help = document.getElementById("shortcut-help");
      if (help) { help.open = !help.open; event.preventDefault(); }
      return;
    }
    if (!/^[a-z0-9]$/.test(event.key)) return;
    var target = area.querySelector('[data-key="' + event.key + '"]');
    if (!target) return;
    event.preventDefault();
    if (target.tagName === "FORM") {
      if (!target.querySelector("button[disabled]")) target.requestSubmit();
      return;
    }
    target.open = true;
    target.scrollIntoView({ block: "nearest" });
    var field = target.querySelector("form input:not([type=hidden]), form select, form textarea, form button");
    if (field) field.focus();
  });
})();

// A click on the screenshot panel: the picture is shown at whatever size the page allows, so the click is
// scaled back to screen pixels (data-screen-width/-height) before the form posts it as screen.x / screen.y.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target || target.tagName !== "INPUT" || target.type !== "image") return;
    var form = target.closest("form.panel-screenshot");
    if (!form) return;
    var box = target.getBoundingClientRect();
    if (!box.width || !box.height) return;
    var width = Number(form.dataset.screenWidth), height = Number(form.dataset.screenHeight);
    var x = Math.floor((event.clientX - box.left) * width / box.width);
    var y = Math.floor((event.clientY - box.top) * height / box.height);
    form.elements["screen.x"].value = String(Math.min(width - 1, Math.max(0, x)));
    form.elements["screen.y"].value = String(Math.min(height - 1, Math.max(0, y)));
  });
})();
