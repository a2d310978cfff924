// The last hour as inline SVG charts (GET /ops/last-hour; Postgres, no Prometheus needed).
import { $, esc, fmt, hhmm, setZone } from './format.js';
import { api } from './session.js';

const W = 360;
const H = 120;
const L = 34;
const R = 6;
const T = 8;
const B = 18;

function bars(minutes, series, x, y) {
  const n = minutes.length;
  const bw = Math.max(1, (W - L - R) / n - 1);
  let out = '';
  for (let i = 0; i < n; i++) {
    let base = 0;
    for (const s of series) {
      const v = s.values[i] || 0;
      if (v > 0)
        out += `<rect x="${(x(i) - bw / 2).toFixed(1)}" y="${y(base + v).toFixed(1)}" width="${bw.toFixed(1)}" height="${(y(base) - y(base + v)).toFixed(1)}" fill="${s.color}"><title>${esc(`${hhmm(minutes[i])} ${s.label} ${v}`)}</title></rect>`;
      base += v;
    }
  }
  return out;
}

function lines(series, x, y) {
  let out = '';
  for (const s of series) {
    // one polyline per run of known values: a minute without data is a gap, not a slope
    const runs = [[]];
    s.values.forEach((v, i) => (v === null ? runs.push([]) : runs[runs.length - 1].push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`)));
    for (const pts of runs.filter((r) => r.length)) {
      const [cx, cy] = pts[0].split(',');
      out += pts.length === 1 ? `<circle cx="${cx}" cy="${cy}" r="1.8" fill="${s.color}"/>` : `<polyline points="${pts.join(' ')}" fill="none" stroke="${s.color}" stroke-width="1.5"/>`;
    }
  }
  return out;
}

function chart(svg, minutes, series, opts = {}) {
  const n = minutes.length;
  const stackedTotals = opts.stacked ? minutes.map((_, i) => series.reduce((a, s) => a + (s.values[i] || 0), 0)) : [];
  const max = Math.max(1, ...series.flatMap((s) => s.values.filter((v) => v !== null)).concat(stackedTotals));
  const x = (i) => L + (i * (W - L - R)) / Math.max(1, n - 1);
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const axes =
    `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#999"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#999"/>` +
    `<text x="${L - 3}" y="${T + 8}" font-size="9" text-anchor="end" fill="#555">${esc(Math.round(max * 10) / 10)}</text><text x="${L - 3}" y="${H - B}" font-size="9" text-anchor="end" fill="#555">0</text>` +
    `<text x="${L}" y="${H - 4}" font-size="9" fill="#555">${esc(hhmm(minutes[0]))}</text><text x="${W - R}" y="${H - 4}" font-size="9" text-anchor="end" fill="#555">${esc(hhmm(minutes[n - 1]))}</text>`;
  svg.innerHTML = axes + (opts.stacked ? bars(minutes, series, x, y) : lines(series, x, y));
}

const legend = (el, series) => {
  el.innerHTML = series.map((s) => `<span><svg class="swatch" width="10" height="10" viewBox="0 0 10 10"><rect width="10" height="10" fill="${s.color}"/></svg> ${esc(s.label)}</span>`).join('');
};

export async function loadCharts() {
  const h = await api('/ops/last-hour');
  setZone(h.timeZone);
  $('charts-time').textContent = `(${fmt(h.minutes[0])} – ${fmt(h.now)}, airport time)`;
  chart($('chart-backlog'), h.minutes, [{ label: 'backlog', color: '#36c', values: h.backlog }]);
  const applied = [
    { label: 'SUCCEEDED', color: '#3a3', values: h.applied.SUCCEEDED },
    { label: 'SKIPPED', color: '#aaa', values: h.applied.SKIPPED },
    { label: 'DEAD', color: '#c00', values: h.applied.DEAD },
  ];
  chart($('chart-applied'), h.minutes, applied, { stacked: true });
  legend($('legend-applied'), applied);
  const lat = [
    { label: 'p50', color: '#36c', values: h.latencySeconds.p50 },
    { label: 'p95', color: '#e80', values: h.latencySeconds.p95 },
    { label: 'max', color: '#c00', values: h.latencySeconds.max },
  ];
  chart($('chart-latency'), h.minutes, lat);
  legend($('legend-latency'), lat);
  chart($('chart-dispatch'), h.minutes, [{ label: 'pending', color: '#863', values: h.dispatchPending }]);
}

export async function refreshCharts() {
  try {
    await loadCharts();
  } catch (e) {
    $('charts-time').textContent = `(charts cannot load: ${e.message})`;
  }
}
