// First on the page, so errors from every later script (the Vega bundles included) are kept.
// The browser test reads data-errors and #page-errors; a reader sees the messages on the page.
(function () {
  var errors = [];
  function record(text) {
    errors.push(String(text));
    var show = function () {
      var box = document.getElementById("page-errors");
      if (!box) return;
      box.hidden = false;
      box.textContent = "moesim-page-error: " + errors.join("\nmoesim-page-error: ");
      document.body.setAttribute("data-errors", String(errors.length));
    };
    if (document.body) show(); else document.addEventListener("DOMContentLoaded", show);
  }
  window.moesimRecordError = record;
  window.addEventListener("error", function (e) {
    record((e.message || "error") + (e.filename ? " (" + e.filename + ":" + e.lineno + ")" : ""));
  });
  window.addEventListener("unhandledrejection", function (e) {
    record("unhandled rejection: " + (e.reason && e.reason.message ? e.reason.message : e.reason));
  });
  var consoleError = console.error;
  console.error = function () {
    record(Array.prototype.map.call(arguments, String).join(" "));
    return consoleError.apply(console, arguments);
  };
})();
