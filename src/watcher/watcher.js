// The watcher page: run list, detail pane and live W&B charts (docs/watcher.md "Page").
"use strict";
(function () {
  const statusLine = document.getElementById("status");
  const runsBox = document.getElementById("runs");
  const detail = document.getElementById("detail");
  const filter = document.getElementById("filter");
  let selectedId = null;
  let filterTimer = null;
  let detailRequest = 0;

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else if (key === "onclick") node.addEventListener("click", value);
      else node.setAttribute(key, value);
    }
    for (const child of children || []) node.append(child);
    return node;
  }
  function svgEl(tag, attrs) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    return node;
  }
  function fmt(value, format) {
    if (value === null || value === undefined) return "–";
    if (format === "percent") return (value * 100).toFixed(1) + "%";
    if (typeof value === "number" && !Number.isInteger(value)) return value.toPrecision(4);
    return String(value);
  }
  async function getJson(url) {
    const response = await fetch(url, { cache: "no-store" });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      const detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
      throw new Error(detail || ("HTTP " + response.status));
    }
    return body;
  }

  async function loadRuns() {
    const query = filter.value;
    try {
      const data = await getJson("/api/models?q=" + encodeURIComponent(query));
      statusLine.textContent = data.count + " runs" + (query ? " matching “" + query + "”" : "");
      runsBox.replaceChildren();
      for (const run of data.models) {
        const card = el("div", { class: "run-card" + (run.has_evaluations ? " evaluated" : ""), "data-id": run.id,
                                 onclick: () => selectModel(run.id) }, [
          el("div", { class: "name", text: run.name }),
          el("div", { class: "meta" }, [
            el("span", { class: "badge", text: run.stage }),
            run.checkpoint_count + " checkpoints · " + run.evaluation_count + " evals"]),
        ]);
        runsBox.append(card);
      }
      if (data.models.length && !data.models.some((run) => run.id === selectedId)) {
        selectModel(data.models[0].id);
      }
      markSelected();
    } catch (error) {
      statusLine.textContent = "Error: " + error.message;
    }
  }
  function markSelected() {
    for (const card of runsBox.querySelectorAll(".run-card")) {
      card.classList.toggle("selected", Number(card.dataset.id) === selectedId);
    }
  }

  function table(headers, rows) {
    return el("table", {}, [
      el("thead", {}, [el("tr", {}, headers.map((h) => el("th", { text: h })))]),
      el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((cell) =>
        cell instanceof Node ? el("td", {}, [cell]) : el("td", { text: cell === null || cell === undefined ? "–" : String(cell) }))))),
    ]);
  }
  function link(href, label) {
    return href ? el("a", { href: href, target: "_blank", rel: "noopener", text: label || href }) : document.createTextNode(label || "–");
  }

  async function selectModel(id) {
    selectedId = id;
    markSelected();
    const request = ++detailRequest;
    let data;
    try {
      data = await getJson("/api/models/" + id);
    } catch (error) {
      detail.replaceChildren(el("p", { class: "error", text: error.message }));
      return;
    }
    if (request !== detailRequest) return;
    renderDetail(data);
    loadMetrics(id, request);
  }

  function renderDetail(data) {
    const model = data.model;
    const wandbCount = data.training_runs.reduce((n, run) => n + run.wandb_runs.length, 0);
    const sourceCount = data.datasets.reduce((n, d) => n + d.sources.length, 0);
    const benchmarkCount = data.evaluations.reduce((n, e) => n + e.benchmarks.length, 0);
    const picker = el("details", { id: "checkpoints" }, [
      el("summary", { text: data.checkpoints.length + " checkpoints" }),
      el("div", {}, data.checkpoints.map((c) => el("div", {}, [
        el("a", { href: "#", text: "step " + fmt(c.checkpoint_step) + (c.evaluation_count ? " · " + c.evaluation_count + " evals" : ""),
                  onclick: (event) => { event.preventDefault(); selectModel(c.id); } })]))),
    ]);
    const lineage = el("div", { class: "lineage" }, data.training_runs.map((run) => el("div", { class: "card" }, [
      el("div", {}, [el("span", { class: "badge", text: run.stage }), el("b", { text: run.config_path ? run.config_path.split("/").pop() : "no TOML" })]),
      table(["field", "value"], [
        ["checkpoint", run.checkpoint_path], ["output_dir", run.output_dir], ["config", run.config_path],
        ...Object.entries(run.hyperparameters).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : v]),
      ]),
      table(["W&B run", "project", "state"], run.wandb_runs.map((w) => [
        link(w.url, w.run_id || w.name || "(no id)"), (w.entity || "–") + "/" + (w.project || "–"), w.offline ? "offline" : "online"])),
    ])));
    const datasets = data.datasets.map((d) => el("div", {}, [
      el("h3", { text: d.stage.toUpperCase() + " · " + d.dataset_name }),
      el("div", { class: "muted", text: d.manifest_path || d.configured_path }),
      table(["source", "weight", "train quota", "val quota", "parquet"], d.sources.map((s) =>
        [s.source_name, s.weight, s.train_quota, s.validation_quota, el("span", { class: "path", text: s.source_path || "–" })])),
    ]));
    const shown = data.evaluations.filter((e) => e.status === "complete" || e.status === "failed");
    const folded = data.evaluations.filter((e) => !(e.status === "complete" || e.status === "failed"));
    const evalRows = [];
    for (const e of shown) {
      const name = e.config_path.split("/").pop();
      if (!e.benchmarks.length) evalRows.push([e.stage, fmt(e.checkpoint_step), name, el("span", { class: "status-" + e.status, text: e.status }), "–", "–", "–"]);
      for (const b of e.benchmarks) {
        evalRows.push([e.stage, fmt(e.checkpoint_step), name, el("span", { class: "status-" + e.status, text: e.status }), b.dataset,
                       fmt(b.mean_accuracy, "percent") + " ± " + fmt(b.stdev_accuracy, "percent"),
                       fmt(b.min_accuracy, "percent") + " – " + fmt(b.max_accuracy, "percent") + " (" + b.runs + " runs)"]);
      }
    }
    detail.replaceChildren(
      el("h2", { id: "detail-title", text: model.name }),
      el("div", {}, [el("span", { class: "badge", text: model.stage }), "step " + fmt(model.checkpoint_step), " · ",
                     el("span", { class: "path muted", text: model.model_path })]),
      picker,
      el("div", { class: "counters" }, [
        el("div", { class: "counter" }, [el("b", { text: String(data.training_runs.length) }), "training stages"]),
        el("div", { class: "counter" }, [el("b", { text: String(wandbCount) }), "W&B attempts"]),
        el("div", { class: "counter" }, [el("b", { text: String(sourceCount) }), "source parquet rows"]),
        el("div", { class: "counter" }, [el("b", { text: String(benchmarkCount) }), "benchmark outcomes across lineage"]),
      ]),
      el("section", { id: "metrics" }, [el("h2", { text: "Live W&B metrics" }), el("p", { class: "muted", text: "Loading…" })]),
      el("section", { id: "lineage" }, [el("h2", { text: "Training lineage" }), lineage]),
      el("section", { id: "datasets" }, [el("h2", { text: "Dataset mix" }), ...datasets]),
      el("section", { id: "evaluations" }, [
        el("h2", { text: "Evaluations" }),
        table(["stage", "step", "config", "status", "dataset", "mean ± stdev", "range"], evalRows),
        folded.length ? el("details", {}, [el("summary", { text: folded.length + " incomplete evals" }),
          table(["stage", "step", "config", "status", "error"], folded.map((e) => [e.stage, fmt(e.checkpoint_step), e.config_path.split("/").pop(), e.status, e.error]))])
          : document.createTextNode(""),
      ]),
    );
  }

  async function loadMetrics(id, request) {
    const box = document.getElementById("metrics");
    let data;
    try {
      data = await getJson("/api/models/" + id + "/metrics");
    } catch (error) {
      if (request === detailRequest) box.replaceChildren(el("h2", { text: "Live W&B metrics" }), el("p", { class: "error", text: error.message }));
      return;
    }
    if (request !== detailRequest) return;
    const charts = el("div", { class: "charts" });
    for (const chart of data.charts) {
      if (!chart.points.length) continue;
      charts.append(el("div", { class: "chart-box" }, [
        el("h3", { text: chart.title + " (" + chart.attempt_count + "/" + chart.source_count + " attempts)" }),
        lineChart(chart)]));
    }
    const errors = data.sources.filter((s) => s.error).map((s) => el("div", { class: "error", text: s.path + ": " + s.error }));
    box.replaceChildren(el("h2", { text: "Live W&B metrics" }),
      charts.childElementCount ? charts : el("p", { class: "muted", text: data.sources.length ? "No metric points found." : "No linked W&B runs." }),
      ...errors);
  }

  // An inline SVG line plot: the mean across attempts, with the min-max band behind it.
  function lineChart(chart) {
    const width = 480, height = 220, left = 48, right = 12, top = 10, bottom = 28;
    const points = chart.points;
    const xs = points.map((p) => p.step), lows = points.map((p) => p.min), highs = points.map((p) => p.max);
    let x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...lows), y1 = Math.max(...highs);
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    if (y0 === y1) { y0 -= Math.abs(y0) * 0.05 || 1; y1 += Math.abs(y1) * 0.05 || 1; }
    const sx = (x) => left + (x - x0) / (x1 - x0) * (width - left - right);
    const sy = (y) => top + (1 - (y - y0) / (y1 - y0)) * (height - top - bottom);
    const svg = svgEl("svg", { class: "chart", viewBox: "0 0 " + width + " " + height, "data-chart": chart.id, role: "img" });
    const upper = points.map((p) => sx(p.step).toFixed(1) + "," + sy(p.max).toFixed(1));
    const lower = points.slice().reverse().map((p) => sx(p.step).toFixed(1) + "," + sy(p.min).toFixed(1));
    svg.append(svgEl("path", { class: "band", d: "M" + upper.join("L") + "L" + lower.join("L") + "Z" }));
    svg.append(svgEl("path", { class: "line", d: "M" + points.map((p) => sx(p.step).toFixed(1) + "," + sy(p.value).toFixed(1)).join("L") }));
    svg.append(svgEl("line", { class: "axis", x1: left, y1: height - bottom, x2: width - right, y2: height - bottom }));
    svg.append(svgEl("line", { class: "axis", x1: left, y1: top, x2: left, y2: height - bottom }));
    const label = (x, y, text, anchor) => { const t = svgEl("text", { x: x, y: y, "text-anchor": anchor }); t.textContent = text; svg.append(t); };
    label(left - 4, top + 8, fmt(y1, chart.format), "end");
    label(left - 4, height - bottom, fmt(y0, chart.format), "end");
    label(left, height - 10, "step " + fmt(x0), "start");
    label(width - right, height - 10, "step " + fmt(x1), "end");
    for (const p of points) svg.append(svgEl("circle", { cx: sx(p.step).toFixed(1), cy: sy(p.value).toFixed(1), r: 2, fill: "#2f6fde" }));
    return svg;
  }

  filter.addEventListener("input", () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(loadRuns, 180);
  });
  loadRuns();
})();
