// "Improve this agent": choosing another recipe puts that recipe's defaults (for the base model) in the config box,
// unless the box was edited by hand. Without JS the box keeps the first recipe's defaults and can be edited.
(function () {
  "use strict";
  var recipe = document.getElementById("improve-recipe");
  var box = document.getElementById("improve-recipe-config");
  if (!recipe || !box) return;
  var shown = box.value;
  recipe.addEventListener("change", function () {
    if (box.value !== shown) return;
    shown = box.value = recipe.options[recipe.selectedIndex].getAttribute("data-defaults") || "{}";
  });
})();
