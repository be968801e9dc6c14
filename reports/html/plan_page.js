// The moesim plan page: draws the throughput-vs-memory chart from its embedded Vega-Lite spec
// (built by reports/plan_frontier_chart.cpp; the tables are static HTML). When the chart has
// rendered, <body data-rendered> equals <body data-charts>, as on the sweep page.
(function () {
  "use strict";
  var body = document.body;
  var spec = JSON.parse(document.getElementById("moesim-plan-frontier").textContent);
  var view = document.getElementById("frontier-view");

  if (spec === null) {
    // No replayed or memory-pruned plan: nothing to place on the chart.
    body.setAttribute("data-charts", "0");
    view.textContent = "No plan was replayed or pruned by memory, so there is nothing to draw.";
    return;
  }
  body.setAttribute("data-charts", "1");
  // SVG, so the page prints sharply and a headless browser's DOM dump shows the marks.
  vegaEmbed(view, spec, { renderer: "svg", actions: false, mode: "vega-lite" }).then(function () {
    body.setAttribute("data-rendered", "1");
  }).catch(function (err) {
    window.moesimRecordError("the frontier chart failed to render: " + (err && err.message ? err.message : err));
  });
})();
