// Draws the console's charts with uPlot from the data the server put in each plot's
// data attributes, and again whenever htmx swaps in a fresh progress fragment.
(function () {
  "use strict";

  function width(el) {
    return Math.max(280, Math.min(640, el.clientWidth || 480));
  }

  // uPlot wants numbers or null in every series.
  function clean(values) {
    return (values || []).map(function (v) { return typeof v === "number" ? v : null; });
  }

  function studyChart(el, data) {
    var kind = el.getAttribute("data-kind");
    var x = clean(data.round);
    var series = [{ label: "Round" }];
    var ys = [];
    if (kind === "accuracy") {
      series.push({ label: "Validation accuracy", stroke: "#1d4ed8", width: 2 });
      series.push({ label: "Test accuracy", stroke: "#b45309", width: 2, dash: [6, 4] });
      ys = [clean(data.validation_accuracy), clean(data.test_accuracy)];
    } else if (kind === "loss") {
      series.push({ label: "Validation loss", stroke: "#7c3aed", width: 2 });
      ys = [clean(data.validation_loss)];
    } else {
      series.push({ label: "Epsilon spent", stroke: "#b91c1c", width: 2 });
      ys = [clean(data.epsilon)];
    }
    return {
      opts: {
        width: width(el), height: 220, series: series,
        scales: { x: { time: false } },
        axes: [{ label: "Round", incrs: [1, 2, 5, 10, 20, 50, 100] }, {}]
      },
      data: [x].concat(ys)
    };
  }

  function burnDownChart(el, data) {
    return {
      opts: {
        width: width(el), height: 220,
        series: [{ label: "Time" }, { label: "Epsilon remaining", stroke: "#047857", width: 2, fill: "rgba(4,120,87,0.08)" }],
        scales: { y: { range: [0, Math.max(data.total || 0, 0.001)] } }
      },
      data: [clean(data.times), clean(data.remaining)]
    };
  }

  function draw(el) {
    if (el.getAttribute("data-drawn") === "1" || typeof window.uPlot !== "function") return;
    var raw = el.getAttribute("data-chart") || el.getAttribute("data-series");
    var data;
    try { data = JSON.parse(raw); } catch (e) { return; }
    if (!data) return;
    var spec = el.hasAttribute("data-chart") ? studyChart(el, data) : burnDownChart(el, data);
    el.setAttribute("data-drawn", "1");
    if (!spec.data[0].length) {
      var empty = document.createElement("p");
      empty.className = "hint";
      empty.textContent = "No aggregated round yet.";
      el.appendChild(empty);
      return;
    }
    new window.uPlot(spec.opts, spec.data, el);
  }

  function drawAll(root) {
    var plots = (root || document).querySelectorAll(".plot");
    for (var i = 0; i < plots.length; i++) draw(plots[i]);
  }

  function start() {
    drawAll(document);
    new MutationObserver(function () { drawAll(document); })
      .observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
