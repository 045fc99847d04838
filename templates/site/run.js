// Run page curves: one Chart.js line chart per metric from this run's runs/<slug>.curves.js, and the overlay of
// other runs a reader ticks (their curves files are loaded on demand as <script> tags, which work on file:// too).
(function () {
  "use strict";
  var section = document.getElementById("curves");
  if (!section || typeof Chart === "undefined") return;
  var store = window.OPENLAB_CURVES || {};
  var runId = section.getAttribute("data-run");
  var own = store[runId];
  if (!own) return;
  var css = getComputedStyle(document.documentElement);
  var fg = css.getPropertyValue("--muted").trim() || "#666";
  var grid = css.getPropertyValue("--line").trim() || "#ddd";
  var PALETTE = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];
  var charts = {};  // curve title -> Chart
  var colours = {};  // run id -> colour
  var next = 1;

  function colour(id) {
    if (!(id in colours)) colours[id] = id === runId ? PALETTE[0] : PALETTE[next++ % PALETTE.length];
    return colours[id];
  }

  function dataset(run, curve) {
    return {
      label: run.name + (run.run_id === runId ? " (this run)" : ""),
      runId: run.run_id,
      data: curve.points.map(function (p) { return { x: p[0], y: p[1] }; }),
      borderColor: colour(run.run_id),
      backgroundColor: colour(run.run_id),
      borderWidth: run.run_id === runId ? 2 : 1.5,
      pointRadius: curve.points.length > 60 ? 0 : 2,
      tension: 0
    };
  }

  own.curves.forEach(function (curve) {
    var canvas = section.querySelector('canvas[data-title="' + curve.title + '"]');
    if (!canvas) return;
    charts[curve.title] = new Chart(canvas, {
      type: "line",
      data: { datasets: [dataset(own, curve)] },
      options: {
        animation: false,
        parsing: false,
        maintainAspectRatio: false,
        interaction: { mode: "nearest", intersect: false },
        plugins: { legend: { display: false, labels: { color: fg } } },
        scales: {
          x: { type: "linear", title: { display: true, text: "step", color: fg }, ticks: { color: fg },
               grid: { color: grid } },
          y: { title: { display: true, text: curve.y, color: fg }, ticks: { color: fg }, grid: { color: grid } }
        }
      }
    });
  });

  function show(run) {
    run.curves.forEach(function (curve) {
      var chart = charts[curve.title];
      if (!chart || chart.data.datasets.some(function (d) { return d.runId === run.run_id; })) return;
      chart.data.datasets.push(dataset(run, curve));
      chart.options.plugins.legend.display = true;
      chart.update();
    });
  }

  function hide(id) {
    Object.keys(charts).forEach(function (title) {
      var chart = charts[title];
      chart.data.datasets = chart.data.datasets.filter(function (d) { return d.runId !== id; });
      chart.options.plugins.legend.display = chart.data.datasets.length > 1;
      chart.update();
    });
  }

  section.querySelectorAll("#overlay input[type=checkbox]").forEach(function (box) {
    box.addEventListener("change", function () {
      var id = box.value;
      if (!box.checked) { hide(id); return; }
      if (store[id]) { show(store[id]); return; }
      var tag = document.createElement("script");
      tag.src = box.getAttribute("data-src");
      tag.onload = function () { store = window.OPENLAB_CURVES || {}; if (store[id] && box.checked) show(store[id]); };
      tag.onerror = function () { box.disabled = true; box.parentNode.title = "this run's curves could not be loaded"; };
      document.head.appendChild(tag);
    });
  });
  section.setAttribute("data-drawn", String(Object.keys(charts).length));
})();
