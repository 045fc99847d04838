/* openlab leaderboard: track tabs, a sortable/filterable paged table and the Pareto chart (drawn with the bundled
   Chart.js, vendor/chart.umd.min.js). Nothing from the network: the data is inlined in index.html (#table-data)
   when small, else data/table.json beside this file. */
(function () {
  "use strict";
  var boot = JSON.parse(document.getElementById("boot").textContent);
  var PAGE = boot.page_size || 50;
  var S = { runs: [], tracks: {}, track: boot.tracks[0].id, key: "rank", dir: 1, filter: "", page: 0, axis: "model_flops" };
  var tbody = document.querySelector("#runs tbody");
  var statusEl = document.getElementById("status");
  var canvas = document.getElementById("chart");
  var empty = document.getElementById("chart-empty");
  var tip = document.getElementById("tip");

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function sci(v) { return v == null ? "—" : Number(v).toExponential(2).replace("e+", "e"); }
  function si(v) {
    if (v == null) return "—";
    var u = [[1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < u.length; i++) if (v >= u[i][0]) return (v / u[i][0]).toFixed(v / u[i][0] < 10 ? 1 : 0) + u[i][1];
    return String(v);
  }
  function dur(s) {
    if (s == null) return "—";
    if (s < 60) return s.toFixed(0) + " s";
    if (s < 3600) return (s / 60).toFixed(1) + " min";
    return (s / 3600).toFixed(2) + " h";
  }
  function runs(n) { return n + (n === 1 ? " run" : " runs"); }
  function pct(v) { return v == null ? "—" : (100 * v).toFixed(1) + "%"; }
  function url(u, d) { return u == null ? null : d.prefixes[u[0]] + u[1]; }

  function load(d) {
    var runs = d.rows.map(function (r, i) {
      var a = r[3] < 0 ? null : d.authors[r[3]];
      return {
        i: i, id: r[0], name: r[1], slug: r[2] == null ? r[0] : r[2], author: a ? a[0] : "", aff: a ? (a[1] || "") : "",
        aurl: a ? a[2] : null, date: r[4], params: r[5], tokens: r[6], seconds: r[7], model_flops: r[8],
        hardware_flops: r[9], mfu: r[10], bpb: r[11], wandb: url(r[12], d), code: url(r[13], d), verification: r[14]
      };
    });
    runs.forEach(function (r) { r.hay = (r.id + " " + r.name + " " + r.author + " " + r.aff).toLowerCase(); });
    S.runs = runs;
    d.tracks.forEach(function (t) {
      var rank = new Map();
      t.members.forEach(function (m, k) { rank.set(m, k + 1); });
      S.tracks[t.id] = { meta: t, rank: rank };
    });
  }

  function members() {
    var t = S.tracks[S.track];
    if (!t) return [];
    var f = S.filter;
    return t.meta.members.map(function (i) { return S.runs[i]; }).filter(function (r) { return !f || r.hay.indexOf(f) >= 0; });
  }

  function sorted(list) {
    var rank = S.tracks[S.track].rank, k = S.key, dir = S.dir;
    var val = k === "rank" ? function (r) { return rank.get(r.i); }
      : k === "author" ? function (r) { return (r.author + " " + r.aff).toLowerCase(); }
      : k === "name" ? function (r) { return r.name.toLowerCase(); }
      : k === "wandb" ? function (r) { return r.wandb ? 0 : 1; }
      : function (r) { return r[k]; };
    return list.slice().sort(function (a, b) {
      var x = val(a), y = val(b);
      if (x == null && y == null) return rank.get(a.i) - rank.get(b.i);
      if (x == null) return 1;
      if (y == null) return -1;
      return x < y ? -dir : x > y ? dir : rank.get(a.i) - rank.get(b.i);
    });
  }

  function row(r, rank) {
    var code = r.code ? ' <a class="muted" href="' + esc(r.code) + '" title="code at its commit">code</a>' : "";
    var who = r.author ? (r.aurl ? '<a href="' + esc(r.aurl) + '" rel="nofollow noopener">' + esc(r.author) + "</a>" : esc(r.author)) : "—";
    if (r.aff) who += ' <span class="muted">' + esc(r.aff) + "</span>";
    var badge = r.verification === "verified" ? '<span class="badge verified">verified</span>'
      : r.verification === "imported" ? '<span class="badge imported" title="recorded by another lab, not run here">imported</span>'
      : '<span class="badge self">self-reported</span>';
    return "<tr data-run=\"" + esc(r.id) + "\"><td class=\"num\">" + rank + "</td><td><a href=\"runs/" + esc(r.slug) + '.html">' + esc(r.name) + "</a>" + code +
      "</td><td>" + who + "</td><td>" + esc(r.date) + '</td><td class="num">' + si(r.params) + '</td><td class="num">' + si(r.tokens) +
      '</td><td class="num">' + dur(r.seconds) + '</td><td class="num">' + sci(r.model_flops) + '</td><td class="num">' + sci(r.hardware_flops) +
      '</td><td class="num">' + pct(r.mfu) + '</td><td class="num">' + r.bpb.toFixed(4) + "</td><td>" +
      (r.wandb ? '<a href="' + esc(r.wandb) + '" rel="nofollow noopener">W&amp;B</a>' : "—") + "</td><td>" + badge + "</td></tr>";
  }

  function renderTable() {
    var list = sorted(members());
    var pages = Math.max(1, Math.ceil(list.length / PAGE));
    if (S.page >= pages) S.page = pages - 1;
    var rank = S.tracks[S.track].rank;
    var slice = list.slice(S.page * PAGE, S.page * PAGE + PAGE);
    tbody.innerHTML = slice.map(function (r) { return row(r, rank.get(r.i)); }).join("") ||
      '<tr><td colspan="13" class="muted">No runs in this track' + (S.filter ? " match the filter" : "") + ".</td></tr>";
    document.getElementById("page").textContent = "page " + (S.page + 1) + " of " + pages + " · " + runs(list.length);
    document.getElementById("prev").disabled = S.page === 0;
    document.getElementById("next").disabled = S.page >= pages - 1;
    document.querySelectorAll("#runs th").forEach(function (th) {
      var k = th.querySelector("button").dataset.key;
      th.setAttribute("aria-sort", k === S.key ? (S.dir > 0 ? "ascending" : "descending") : "none");
    });
  }

  var cssVars = getComputedStyle(document.documentElement);
  function cssVar(name, fallback) { return cssVars.getPropertyValue(name).trim() || fallback; }
  var COLOR = { pt: cssVar("--pt", "#0b63c5"), front: cssVar("--front", "#d1242f"), band: cssVar("--band", "#0b63c51a"),
                muted: cssVar("--muted", "#5b636e"), line: cssVar("--line", "#d8dde3") };
  var chart = null;

  // The BPB band of a threshold track, shaded behind the points.
  var bandPlugin = {
    id: "band",
    beforeDatasetsDraw: function (c) {
      var band = c.options.plugins.band && c.options.plugins.band.range;
      if (!band) return;
      var y = c.scales.y, area = c.chartArea;
      var top = Math.max(y.getPixelForValue(band[1]), area.top), bot = Math.min(y.getPixelForValue(band[0]), area.bottom);
      if (bot <= top) return;
      c.ctx.save();
      c.ctx.fillStyle = COLOR.band;
      c.ctx.fillRect(area.left, top, area.right - area.left, bot - top);
      c.ctx.restore();
    }
  };

  function showTip(ctx) {
    var tt = ctx.tooltip, p = tt.dataPoints && tt.dataPoints[0];
    var r = p && p.raw && p.raw.run;
    if (!tt.opacity || !r) { tip.hidden = true; return; }
    tip.innerHTML = "<strong>" + esc(r.name) + "</strong><br>" + esc(r.author) + (r.aff ? " · " + esc(r.aff) : "") +
      "<br>BPB " + r.bpb.toFixed(4) + " · " + sci(r[S.axis]) + " FLOPs" + (r.verification === "imported" ? " · imported" : "");
    tip.style.left = Math.min(tt.caretX + 12, canvas.clientWidth - 200) + "px";
    tip.style.top = (tt.caretY + 12) + "px";
    tip.hidden = false;
  }

  function points(list, front) {
    return list.map(function (r) { return { x: r[S.axis], y: r.bpb, run: r, front: front, imported: r.verification === "imported" }; });
  }

  function scatter(kind, data, colour, radius) {
    return {
      type: "scatter", kind: kind, data: data, pointRadius: radius, pointHoverRadius: radius + 2, borderWidth: 1.5,
      pointBackgroundColor: data.map(function (d) { return d.imported ? "transparent" : colour; }),
      pointBorderColor: colour, backgroundColor: colour
    };
  }

  // The run under the pointer: the frontier line's own vertices sit on runs too, but carry none.
  function runAt(els) {
    for (var k = 0; k < els.length; k++) {
      var d = chart.data.datasets[els[k].datasetIndex].data[els[k].index];
      if (d && d.run) return d.run;
    }
    return null;
  }

  function renderChart() {
    var t = S.tracks[S.track], ax = S.axis;
    var pts = t ? t.meta.members.map(function (i) { return S.runs[i]; }).filter(function (r) { return r[ax] != null; }) : [];
    var front = new Set(t ? t.meta.frontier[ax] : []);
    if (chart) { chart.destroy(); chart = null; }
    tip.hidden = true;
    if (!pts.length) {
      canvas.hidden = true;
      empty.hidden = false;
      empty.textContent = "No runs with " + (ax === "model_flops" ? "model" : "hardware") + " FLOPs in this track.";
      return;
    }
    canvas.hidden = false;
    empty.hidden = true;
    var fr = pts.filter(function (r) { return front.has(r.i); }).sort(function (a, b) { return a[ax] - b[ax] || a.bpb - b.bpb; });
    var xs = pts.map(function (r) { return Math.log10(r[ax]); });
    var xmin = Math.pow(10, Math.floor(Math.min.apply(null, xs)));
    var xmax = Math.pow(10, Math.max(Math.ceil(Math.max.apply(null, xs)), Math.log10(xmin) + 1));
    // The frontier as a step line: across to the next frontier run, then down to it; on to the right edge.
    var line = [];
    fr.forEach(function (r, k) {
      if (k) line.push({ x: r[ax], y: fr[k - 1].bpb });
      line.push({ x: r[ax], y: r.bpb });
    });
    if (line.length) line.push({ x: xmax, y: line[line.length - 1].y });
    chart = new Chart(canvas, {
      data: {
        datasets: [
          { type: "line", kind: "frontier", data: line, borderColor: COLOR.front, borderWidth: 1.5,
            pointRadius: 0, pointHoverRadius: 0, fill: false },
          scatter("front", points(fr, true), COLOR.front, 4),
          scatter("runs", points(pts.filter(function (r) { return !front.has(r.i); }), false), COLOR.pt, 3)
        ]
      },
      plugins: [bandPlugin],
      options: {
        animation: false,
        maintainAspectRatio: false,
        parsing: false,
        interaction: { mode: "nearest", intersect: true },
        onHover: function (ev, els) { canvas.style.cursor = runAt(els) ? "pointer" : "default"; },
        onClick: function (ev, els) {
          var r = runAt(els);
          if (r) window.location.href = "runs/" + encodeURIComponent(r.slug) + ".html";
        },
        plugins: {
          legend: { display: false },
          band: { range: t.meta.band },
          tooltip: { enabled: false, external: showTip, filter: function (item) { return !!(item.raw && item.raw.run); } }
        },
        scales: {
          x: { type: "logarithmic", min: xmin, max: xmax,
               title: { display: true, text: (ax === "model_flops" ? "model" : "hardware") + " FLOPs (log)", color: COLOR.muted },
               ticks: { color: COLOR.muted, autoSkip: false, callback: function (v) {
                 var e = Math.log10(v);
                 return Math.abs(e - Math.round(e)) < 1e-9 ? "1e" + Math.round(e) : null;
               } },
               grid: { color: COLOR.line } },
          y: { title: { display: true, text: "BPB", color: COLOR.muted }, ticks: { color: COLOR.muted }, grid: { color: COLOR.line },
               grace: "6%" }
        }
      }
    });
  }
  canvas.addEventListener("mouseleave", function () { tip.hidden = true; });

  function selectTrack(id) {
    S.track = id; S.page = 0; S.key = "rank"; S.dir = 1;
    document.querySelectorAll(".tab").forEach(function (b) { b.setAttribute("aria-selected", b.dataset.track === id ? "true" : "false"); });
    document.querySelectorAll("[data-track]:not(.tab)").forEach(function (e) { e.hidden = e.dataset.track !== id; });
    if (location.hash.slice(1) !== id) history.replaceState(null, "", "#" + id);
    render();
  }
  function render() { if (S.runs.length || boot.n_runs === 0) { renderTable(); renderChart(); } }

  document.querySelectorAll(".tab").forEach(function (b) { b.addEventListener("click", function () { selectTrack(b.dataset.track); }); });
  document.querySelectorAll("#runs th button").forEach(function (b) {
    b.addEventListener("click", function () {
      var k = b.dataset.key;
      if (S.key === k) S.dir = -S.dir; else { S.key = k; S.dir = 1; }
      S.page = 0; renderTable();
    });
  });
  var timer = null;
  document.getElementById("filter").addEventListener("input", function (ev) {
    clearTimeout(timer);
    timer = setTimeout(function () { S.filter = ev.target.value.trim().toLowerCase(); S.page = 0; renderTable(); }, 120);
  });
  document.getElementById("prev").addEventListener("click", function () { S.page--; renderTable(); });
  document.getElementById("next").addEventListener("click", function () { S.page++; renderTable(); });
  document.querySelectorAll('input[name="axis"]').forEach(function (i) {
    i.addEventListener("change", function () { S.axis = i.value; renderChart(); });
  });

  function ready(d) {
    load(d);
    statusEl.textContent = runs(d.rows.length);
    var want = location.hash.slice(1);
    selectTrack(S.tracks[want] ? want : S.track);
    document.body.setAttribute("data-ready", "1");
  }
  function unreadable(why) {
    statusEl.textContent = "could not load " + boot.data + " (" + why + ")";
    var p = document.createElement("p");
    p.className = "fallback";
    p.innerHTML = (location.protocol === "file:" ? "This page was opened as a file and its table is too large to be inlined. "
      : "The table data could not be fetched. ") +
      "Serve the site instead: <code>openlab leaderboard serve --results '…/results.json' --out " +
      "&lt;this folder&gt;</code>, or <code>python3 -m http.server -d &lt;this folder&gt;</code>, then open the address it prints.";
    tbody.parentNode.parentNode.parentNode.insertBefore(p, tbody.parentNode.parentNode);
  }
  // The table inlined in the page (small sites) works opened as file://, where fetch() is refused.
  var inline = document.getElementById("table-data");
  if (inline) ready(JSON.parse(inline.textContent));
  else if (location.protocol === "file:") unreadable("opened as a file");
  else fetch(boot.data).then(function (r) {
    if (!r.ok) throw new Error("HTTP " + r.status);
    return r.json();
  }).then(ready).catch(function (err) { unreadable(err.message); });
})();
