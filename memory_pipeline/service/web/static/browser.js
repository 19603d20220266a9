// The memory browser's few behaviours without a server round trip: the theme toggle (remembered in
// localStorage; the page's first paint reads it in <head>) and the copy buttons next to short ids.
(function () {
  "use strict";
  function effectiveTheme() {
    var chosen = document.documentElement.dataset.theme;
    if (chosen) return chosen;
    return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
  function labelToggle(button) {
    var next = effectiveTheme() === "dark" ? "light" : "dark";
    button.textContent = next === "dark" ? "Dark theme" : "Light theme";
    button.setAttribute("aria-label", "Switch to the " + next + " theme");
  }
  document.addEventListener("click", function (event) {
    var toggle = event.target.closest("#theme-toggle");
    if (toggle) {
      var next = effectiveTheme() === "dark" ? "light" : "dark";
      document.documentElement.dataset.theme = next;
      try { localStorage.setItem("memory-theme", next); } catch (e) { /* private mode: this page only */ }
      labelToggle(toggle);
      return;
    }
    var copy = event.target.closest("button.copy");
    if (copy) {
      event.preventDefault();
      var text = copy.dataset.copy;
      var done = function () {
        copy.classList.add("copied");
        copy.textContent = "copied";
        setTimeout(function () { copy.classList.remove("copied"); copy.textContent = "copy"; }, 1500);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { fallback(text); done(); });
      } else { fallback(text); done(); }
    }
  });
  // http://127.0.0.1 is a secure context, but a browser may still refuse the clipboard API: a hidden textarea.
  function fallback(text) {
    var area = document.createElement("textarea");
    area.value = text; area.setAttribute("readonly", ""); area.style.position = "fixed"; area.style.opacity = "0";
    document.body.appendChild(area); area.select();
    try { document.execCommand("copy"); } catch (e) { /* nothing more to try */ }
    document.body.removeChild(area);
  }
  document.addEventListener("DOMContentLoaded", function () {
    var toggle = document.getElementById("theme-toggle");
    if (toggle) labelToggle(toggle);
  });
})();
