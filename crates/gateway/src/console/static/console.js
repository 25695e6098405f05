// Draws the console's charts with uPlot from the data the server put in each plot's
// data attributes, again whenever htmx swaps in a fresh progress fragment, and follows a
// running study's progress live from its server-sent events.
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

  // A statistics answer: survival curves over the time grid, or one bar per released cell.
  function answerChart(el, data) {
    var palette = ["#1d4ed8", "#b45309", "#047857", "#7c3aed", "#b91c1c", "#0e7490"];
    var survival = data.kind === "survival";
    var series = [{ label: survival ? "Days" : "Cell" }];
    var ys = [];
    (data.series || []).forEach(function (s, i) {
      var one = { label: s.label, stroke: palette[i % palette.length], width: 2 };
      if (!survival) {
        one.fill = "rgba(29,78,216,0.25)";
        one.paths = window.uPlot.paths && window.uPlot.paths.bars ? window.uPlot.paths.bars({ size: [0.6, 64] }) : undefined;
        one.points = { show: false };
      }
      series.push(one);
      ys.push(clean(s.values));
    });
    var labels = data.labels || [];
    return {
      opts: {
        width: width(el), height: 240, series: series,
        scales: survival ? { x: { time: false }, y: { range: [0, 1] } } : { x: { time: false } },
        axes: survival ? [{ label: "Days" }, { label: "S(t)" }] : [{
          values: function (u, splits) { return splits.map(function (v) { return labels[v] || ""; }); },
          incrs: [1]
        }, {}]
      },
      data: [clean(data.x)].concat(ys)
    };
  }

  function draw(el) {
    if (el.getAttribute("data-drawn") === "1" || typeof window.uPlot !== "function") return;
    if (el.hasAttribute("data-answer")) {
      var answer;
      try { answer = JSON.parse(el.getAttribute("data-answer")); } catch (e) { return; }
      el.setAttribute("data-drawn", "1");
      var a = answerChart(el, answer);
      new window.uPlot(a.opts, a.data, el);
      return;
    }
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

  // ---- live study progress ------------------------------------------------------------
  // The study page follows the console's relay of the study's server-sent events
  // (GET /console/studies/{id}/events): each `round` event is a round attempt exactly as the
  // rounds view gives it (small-cell rule applied), each `study` event the status, rounds done
  // and epsilon spent, and `end` says the study is over. While the stream is open, the htmx
  // poll of the progress fragment is held back; when EventSource is missing or the stream
  // fails, the poll goes on as the fallback.

  // As the server's templates write a rounded number (a whole one keeps its ".0").
  function rounded(v, digits) {
    if (typeof v !== "number") return "\u2014";
    var f = Math.pow(10, digits);
    var r = Math.round(v * f) / f;
    return Number.isInteger(r) ? r.toFixed(1) : String(r);
  }

  function count(v) {
    return typeof v === "number" ? String(v) : "withheld";
  }

  function cell(row, text, colspan) {
    var td = document.createElement("td");
    td.textContent = text;
    if (colspan) td.colSpan = colspan;
    row.appendChild(td);
  }

  function Live(box) {
    this.box = box;
    this.rounds = {};
    this.streaming = false;
    this.ended = false;
    var seed = box.querySelector(".progress");
    var initial = [];
    try { initial = JSON.parse(seed.getAttribute("data-rounds")) || []; } catch (e) { initial = []; }
    for (var i = 0; i < initial.length; i++) this.keep(initial[i]);
  }

  Live.prototype.keep = function (round) {
    this.rounds[round.round + "." + round.attempt] = round;
  };

  Live.prototype.sorted = function () {
    var rounds = this.rounds;
    return Object.keys(rounds).map(function (k) { return rounds[k]; }).sort(function (a, b) {
      return a.round - b.round || a.attempt - b.attempt;
    });
  };

  Live.prototype.find = function (selector) {
    return this.box.querySelector(selector);
  };

  // The rounds table and the charts, from every round attempt known so far.
  Live.prototype.renderRounds = function () {
    var rounds = this.sorted();
    var body = this.find("table.rounds tbody");
    if (body) {
      var rows = document.createDocumentFragment();
      rounds.forEach(function (r) {
        var sites = r.sites || [];
        if (!sites.length) {
          var waiting = document.createElement("tr");
          cell(waiting, String(r.round));
          cell(waiting, r.phase);
          cell(waiting, "waiting for " + (r.participants || []).join(", "), 6);
          rows.appendChild(waiting);
        }
        sites.forEach(function (s) {
          var tr = document.createElement("tr");
          cell(tr, String(r.round));
          cell(tr, r.phase);
          cell(tr, s.data_holder);
          cell(tr, s.contributed ? "yes" : "no");
          cell(tr, count(s.samples));
          cell(tr, count(s.excluded_subjects));
          cell(tr, rounded(s.train_loss, 4));
          cell(tr, rounded(r.epsilon_total, 3));
          rows.appendChild(tr);
        });
      });
      if (!rounds.length) {
        var none = document.createElement("tr");
        cell(none, "No round has opened yet.", 8);
        rows.appendChild(none);
      }
      body.replaceChildren(rows);
    }
    var aggregated = rounds.filter(function (r) { return r.phase === "aggregated"; });
    var pick = function (f) { return aggregated.map(function (r) { var v = f(r); return v === undefined ? null : v; }); };
    var evaluation = function (r) { return r.evaluation || {}; };
    var chart = JSON.stringify({
      round: pick(function (r) { return r.round; }),
      validation_accuracy: pick(function (r) { return evaluation(r).mean_validation_accuracy; }),
      test_accuracy: pick(function (r) { return evaluation(r).mean_test_accuracy; }),
      validation_loss: pick(function (r) { return (evaluation(r).mean_validation || {}).loss; }),
      epsilon: pick(function (r) { return r.epsilon_total; })
    });
    var plots = this.box.querySelectorAll(".plot[data-chart]");
    for (var i = 0; i < plots.length; i++) {
      if (plots[i].getAttribute("data-chart") === chart) continue;
      plots[i].setAttribute("data-chart", chart);
      plots[i].removeAttribute("data-drawn");
      plots[i].replaceChildren();
      draw(plots[i]);
    }
    var latest = rounds[rounds.length - 1];
    var where = this.find("#study-latest");
    if (where && latest) where.textContent = "\u00b7 round " + latest.round + " " + latest.phase;
  };

  Live.prototype.renderStudy = function (progress) {
    var status = this.find("#study-status");
    if (status) {
      status.textContent = progress.status;
      status.className = "status status-" + progress.status;
    }
    var spent = this.find("#study-epsilon");
    if (spent) spent.textContent = rounded(progress.epsilon_spent, 3);
    var model = this.find("#model-link");
    if (model && progress.status === "completed") model.hidden = false;
  };

  Live.prototype.connect = function (url) {
    var live = this;
    var source = new window.EventSource(url);
    source.addEventListener("open", function () { live.streaming = true; });
    source.addEventListener("error", function () {
      // Reconnecting (the browser does it by itself) or given up: the poll covers the gap.
      live.streaming = false;
    });
    source.addEventListener("round", function (e) {
      try { live.keep(JSON.parse(e.data)); } catch (err) { return; }
      live.renderRounds();
    });
    source.addEventListener("study", function (e) {
      try { live.renderStudy(JSON.parse(e.data)); } catch (err) { return; }
    });
    source.addEventListener("end", function () {
      live.ended = true;
      source.close();
    });
    // Hold the fallback poll back while the stream is open, and for good once it has ended.
    document.addEventListener("htmx:before:request", function (e) {
      if (e.target === live.box && (live.streaming || live.ended)) e.preventDefault();
    });
  };

  function follow() {
    var box = document.querySelector("#progress[data-events]");
    if (!box || typeof window.EventSource !== "function") return;
    new Live(box).connect(box.getAttribute("data-events"));
  }

  function start() {
    drawAll(document);
    new MutationObserver(function () { drawAll(document); })
      .observe(document.body, { childList: true, subtree: true });
    follow();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
