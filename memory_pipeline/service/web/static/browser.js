// The memory browser's few behaviours of its own: the theme toggle (remembered in localStorage; the page's first
// paint reads it in <head>), the copy buttons next to short ids, and the message a failed write shows.
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
  // A failed request from a page (htmx swaps nothing on an error status): said in the page's alert region. The
  // service's answer to a page is a short fragment it escaped (marked X-Memory-Failed); any other answer is shown
  // as text only. A write's message stays until the next write; a failed poll's (the recent feed) goes when the
  // poll answers again.
  function verbOf(event) {
    var config = event.detail && event.detail.requestConfig;
    return config && config.verb ? String(config.verb).toLowerCase() : "get";
  }
  function hideFailed() {
    var region = document.getElementById("failed");
    if (!region) return;
    region.hidden = true;
    region.textContent = "";
    delete region.dataset.by;
  }
  function showFailed(verb, fragment, text) {
    var region = document.getElementById("failed");
    if (!region) return;
    if (fragment) {
      region.innerHTML = fragment;
    } else {
      region.textContent = "";
      var line = document.createElement("p");
      line.textContent = text;
      region.appendChild(line);
    }
    region.dataset.by = verb;
    region.hidden = false;
    region.scrollIntoView({ block: "nearest" });
  }
  function reasonOf(xhr) {
    var body = xhr.responseText || "";
    try {
      var detail = JSON.parse(body).detail;
      if (typeof detail === "string") return detail;
    } catch (e) { /* not JSON: its text */ }
    return body.length > 300 ? body.slice(0, 300) + "…" : body;
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (verbOf(event) !== "get") hideFailed();
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var region = document.getElementById("failed");
    if (event.detail.successful && verbOf(event) === "get" && region && region.dataset.by === "get") hideFailed();
  });
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (xhr.getResponseHeader("X-Memory-Failed")) {
      showFailed(verbOf(event), xhr.responseText, null);
    } else {
      showFailed(verbOf(event), null, "Not done: the service answered " + xhr.status + " " + reasonOf(xhr));
    }
  });
  document.addEventListener("htmx:sendError", function (event) {
    showFailed(verbOf(event), null, "Not done: the memory service did not answer. Is memory-pipeline serve (or up) " +
      "still running? Reload the page once it is back to see what holds.");
  });
  document.addEventListener("DOMContentLoaded", function () {
    var toggle = document.getElementById("theme-toggle");
    if (toggle) labelToggle(toggle);
  });
})();
