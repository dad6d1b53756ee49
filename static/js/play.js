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

// JSON fields (lists of objects: purchase order lines, quote lines) are checked as the player types: the line
// under the field says what is wrong, and the form's submit button stays disabled until every JSON field of the
// form parses to the kind its schema asks for (an empty optional field is fine; the server checks the rest).
(function () {
  "use strict";
  function problem(field) {
    var text = field.value.trim();
    if (!text) return "";
    var value;
    try { value = JSON.parse(text); } catch (error) { return "Not valid JSON yet: " + error.message; }
    var wanted = field.dataset.json;
    if (wanted === "array" && !Array.isArray(value)) return "Expected a JSON list [ ... ], like the example.";
    if (wanted === "object" && (value === null || typeof value !== "object" || Array.isArray(value))) {
      return "Expected a JSON object { ... }, like the example.";
    }
    return "";
  }
  function check(field) {
    var note = document.getElementById(field.id + "-check");
    var message = problem(field);
    field.setAttribute("aria-invalid", message ? "true" : "false");
    if (note) {
      note.textContent = message || (field.value.trim() ? "Valid JSON." : note.dataset.idle || note.textContent);
      note.classList.toggle("invalid", !!message);
      note.classList.toggle("valid", !message && !!field.value.trim());
    }
    var form = field.form;
    if (!form) return;
    var blocked = Array.prototype.some.call(form.querySelectorAll("textarea[data-json]"), function (f) { return !!problem(f); });
    form.querySelectorAll("button[type=submit]").forEach(function (button) { button.disabled = blocked; });
  }
  function checkAll(root) {
    root.querySelectorAll("textarea[data-json]").forEach(function (field) {
      var note = document.getElementById(field.id + "-check");
      if (note && !note.dataset.idle) note.dataset.idle = note.textContent;
      check(field);
    });
  }
  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("textarea[data-json]")) check(event.target);
  });
  document.addEventListener("DOMContentLoaded", function () { checkAll(document); });
  document.addEventListener("htmx:afterSettle", function (event) { checkAll(event.detail.target); });
})();

// After a tool call or a panel's call, focus goes back to the tool list (the summary of the tool just used, or
// the list itself), so the next shortcut works at once; htmx would otherwise restore it to the field that was
// focused, where every key types. A refused form (fields marked) focuses its first marked field instead. It runs
// on afterSwap, in the same task as the swap: on afterSettle (20 ms later) it could take the focus from a form the
// person opened by a shortcut in between, and their Enter would toggle the old tool instead of submitting.
(function () {
  "use strict";
  document.addEventListener("htmx:afterSwap", function (event) {
    var area = document.getElementById("play-area");
    var source = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!area || event.detail.target !== area || !source || source.tagName !== "FORM") return;
    if (source.id === "say-form") return;  // a conversation goes on in its message field
    var marked = area.querySelector(".field.has-error input, .field.has-error textarea, .field.has-error select");
    if (marked) { marked.focus(); return; }
    var tool = source.elements.tool && source.elements.tool.value;
    var summary = tool && document.querySelector("#tool-" + CSS.escape(tool) + " > summary");
    var list = summary || area.querySelector(".tool-forms");
    if (list) list.focus({ preventScroll: true });
    // The call's result is drawn above the panels: a form low in the list would leave it out of view, and the
    // person would think nothing happened. The status bar stays in view (sticky), so the result goes just below it.
    var result = document.getElementById("last-result");
    if (result) result.scrollIntoView({ block: "nearest" });
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
