// How well a rendered page fits, measured from the DOM's boxes after its charts have drawn; the
// browser test (tests/reports/html_renders_in_chromium.sh) reads the attributes it sets on <body>:
//   data-page-overflow / data-table-overflow: CSS pixels the page and the table box stick out to
//     the right (0: they fit; the test loads pages 1280 px wide);
//   data-wide-charts: charts wider than their card (they scroll inside it);
//   data-label-overlaps: pairs of labels whose boxes overlap by more than a pixel each way, among
//     the axis labels, the legend's labels and title, and the text marks of each named layer.
// Each chart card (section.chart) also gets its own data-label-overlaps (and data-wide).
(function () {
  "use strict";

  function boxesOf(group) {
    var boxes = [];
    group.querySelectorAll("text").forEach(function (t) {
      if (t.getAttribute("opacity") === "0" || !t.textContent) return;
      var r = t.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) boxes.push(r);
    });
    return boxes;
  }

  // Overlapping by more than a pixel each way (touching labels are fine). The plan page moves its
  // rank labels apart by the same test.
  function overlap(a, b) {
    return Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
      Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  }
  window.moesimBoxesOverlap = overlap;

  function countOverlaps(boxes) {
    var n = 0;
    for (var i = 0; i < boxes.length; i++)
      for (var j = i + 1; j < boxes.length; j++) if (overlap(boxes[i], boxes[j])) n += 1;
    return n;
  }

  // tableBoxes: the elements holding the page's tables (the widest overflow is reported);
  // textLayers: Vega mark names whose text marks must not overlap one another (one set).
  window.moesimMeasureFit = function (tableBoxes, textLayers) {
    var body = document.body, root = document.documentElement, table = 0;
    Array.prototype.forEach.call(tableBoxes, function (box) {
      table = Math.max(table, box.scrollWidth - box.clientWidth);
    });
    body.setAttribute("data-page-overflow", String(Math.max(0, root.scrollWidth - root.clientWidth)));
    body.setAttribute("data-table-overflow", String(Math.max(0, table)));
    var wide = 0, overlaps = 0;
    document.querySelectorAll("section.chart").forEach(function (card) {
      var scroll = card.querySelector(".scroll"), before = overlaps;
      if (scroll && scroll.scrollWidth > scroll.clientWidth + 1) {
        wide += 1;
        card.setAttribute("data-wide", String(scroll.scrollWidth - scroll.clientWidth));
      }
      card.querySelectorAll("g.role-axis-label, g.role-legend-label, g.role-legend-title").forEach(function (group) {
        overlaps += countOverlaps(boxesOf(group));
      });
      var marks = [];
      (textLayers || []).forEach(function (name) {
        card.querySelectorAll("g." + name + "_marks").forEach(function (group) { marks = marks.concat(boxesOf(group)); });
      });
      overlaps += countOverlaps(marks);
      card.setAttribute("data-label-overlaps", String(overlaps - before));
    });
    body.setAttribute("data-wide-charts", String(wide));
    body.setAttribute("data-label-overlaps", String(overlaps));
  };
})();
