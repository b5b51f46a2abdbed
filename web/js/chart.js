// chart.js -- one metric's time series drawn by uPlot: values in the
// metric's unit, a time axis and crosshair shared with the page's other
// charts, events marked as vertical lines on the canvas, and a width that
// follows its container.

import uPlot from '../vendor/uplot.js';

const HEIGHT = 190;
const SYNC_KEY = 'cairn-metrics';   // the page's charts move one crosshair
const MARKER_HIT_PX = 6;            // how near the cursor shows a marker's text
const SPARSE_POINTS = 60;           // a series with fewer values shows them as dots

/** How a catalog unit's values read: compact, with the unit's symbol. */
const UNITS = {
  Percent: { scale: si, suffix: '%' },
  Bytes: { scale: binary, suffix: 'B' },
  Count: { scale: si, suffix: '' },
  Seconds: { scale: si, suffix: ' s' },
  Microseconds: { scale: si, suffix: ' µs' },
  None: { scale: si, suffix: '' },
};

function trim(v) {
  return Number(v.toPrecision(3)).toString();
}

function si(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return `${trim(v / 1e9)}G`;
  if (a >= 1e6) return `${trim(v / 1e6)}M`;
  if (a >= 1e4) return `${trim(v / 1e3)}k`;
  return trim(v);
}

function binary(v) {
  const prefixes = ['', 'Ki', 'Mi', 'Gi', 'Ti'];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < prefixes.length - 1) {
    v /= 1024;
    i++;
  }
  return `${trim(v)} ${prefixes[i]}`;
}

/** A value of a catalog unit as text: "12.5%", "1.5 GiB", "3.2k". */
export function formatValue(unit, v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  const u = UNITS[unit] || UNITS.None;
  return u.scale(v) + u.suffix;
}

/** The palette, from the stylesheet's variables (--series-N, --marker-KIND),
 *  read once: each read of a computed style while the page is being built
 *  would make the browser work out every style again. */
const cssVars = new Map();
function cssVar(name) {
  if (!cssVars.has(name))
    cssVars.set(name, getComputedStyle(document.documentElement).getPropertyValue(name).trim());
  return cssVars.get(name);
}

function seriesColor(i, count) {
  const n = Number(cssVar('--series-count')) || 10;
  return count === 1 ? cssVar('--series-one') : cssVar(`--series-${(i % n) + 1}`);
}

/* Draws markers ({t: epoch s, kind, letter, text}) as dashed vertical lines
 * with their letter on top, and shows the text of the marker under the
 * cursor in tip. */
function markersPlugin(chart) {
  return {
    hooks: {
      draw: [(u) => {
        const { ctx } = u;
        const { left, top, width, height } = u.bbox;
        const px = uPlot.pxRatio;
        ctx.save();
        ctx.lineWidth = 1.5 * px;
        ctx.setLineDash([4 * px, 3 * px]);
        ctx.font = `bold ${11 * px}px ${cssVar('--font') || 'sans-serif'}`;
        for (const m of chart.markers) {
          const x = Math.round(u.valToPos(m.t, 'x', true));
          if (x < left || x > left + width) continue;
          ctx.strokeStyle = ctx.fillStyle = cssVar(`--marker-${m.kind}`);
          ctx.beginPath();
          ctx.moveTo(x, top);
          ctx.lineTo(x, top + height);
          ctx.stroke();
          ctx.fillText(m.letter, x + 3 * px, top + 11 * px);
        }
        ctx.restore();
      }],
      setCursor: [(u) => {
        const x = u.cursor.left;
        const near = x === undefined || x < 0 ? null
          : chart.markers.find((m) => Math.abs(u.valToPos(m.t, 'x') - x) <= MARKER_HIT_PX);
        chart.tip.hidden = !near;
        if (near) {
          chart.tip.textContent = near.text;
          chart.tip.style.left = `${Math.min(x, u.over.clientWidth - chart.tip.offsetWidth)}px`;
        }
      }],
    },
  };
}

/* The y axis as wide as its longest tick text, its label and the gap
 * between (uPlot calls it again as the ticks change). */
function axisWidth(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx];
  if (cycleNum > 1) return axis._size;
  let widest = 0;
  if (values) {
    u.ctx.font = axis.font[0];
    for (const v of values) widest = Math.max(widest, u.ctx.measureText(v).width);
  }
  return Math.ceil(widest / uPlot.pxRatio) + axis.labelSize + 12;
}

/** One chart in container (an element the chart fills the width of).
 *  draw() gives it data; resize() follows the container; destroy() ends it. */
export class Chart {
  constructor(container, unit) {
    this.container = container;
    this.unit = unit;
    this.plot = null;
    this.width = 0;     // the container's, from resize()
    this.labels = null;
    this.range = [0, 1];
    this.markers = [];
    this.sparse = [];   // per series (by uPlot index): too few values for a line to show
    this.tip = document.createElement('p');
    this.tip.className = 'marker-tip';
    this.tip.hidden = true;
  }

  options(labels) {
    const fmt = (v) => formatValue(this.unit, v);
    const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--line'), width: 1 },
                   ticks: { stroke: cssVar('--line'), width: 1 } };
    return {
      width: Math.max(this.width || this.container.clientWidth, 200),
      height: HEIGHT,
      cursor: { sync: { key: SYNC_KEY }, drag: { x: false, y: false } },
      legend: { live: true },
      scales: {
        x: { time: true, range: () => this.range },
        y: { range: (u, min, max) => [Math.min(0, min ?? 0), max > 0 ? max * 1.08 : 1] },
      },
      axes: [
        axis,
        { ...axis, label: this.unit, labelSize: 18, size: axisWidth,
          values: (u, splits) => splits.map(fmt) },
      ],
      series: [{}, ...labels.map((label, i) => ({
        label, stroke: seriesColor(i, labels.length), width: 1.5, value: (u, v) => fmt(v),
        points: { show: (u, i) => this.sparse[i], size: 5 },
      }))],
      plugins: [markersPlugin(this)],
    };
  }

  /** Draw view: {range: [start, end] epoch s, xs: [...], series: [{label,
   *  values}], markers}. Series of the same labels as before are redrawn in
   *  place; others build the plot again. */
  draw(view) {
    this.range = view.range;
    this.markers = view.markers;
    const labels = view.series.map((s) => s.label);
    const data = [view.xs, ...view.series.map((s) => s.values)];
    this.sparse = [false, ...view.series.map((s) => s.points < SPARSE_POINTS)];
    if (this.plot && this.labels && labels.join('\n') === this.labels.join('\n')) {
      this.plot.setData(data);
      return;
    }
    if (this.plot) this.plot.destroy();
    this.labels = labels;
    this.plot = new uPlot(this.options(labels), data, this.container);
    this.plot.over.append(this.tip);
  }

  /** Follow the container's width, as a ResizeObserver reports it (no
   *  layout is forced to read it). */
  resize(width) {
    this.width = Math.round(width);
    if (this.plot && this.width > 0 && this.width !== this.plot.width)
      this.plot.setSize({ width: this.width, height: HEIGHT });
  }

  destroy() {
    if (this.plot) this.plot.destroy();
    this.plot = null;
  }
}
