// The console's shared pieces: element lookup, escaping, times in the airport's zone, tables.
export const $ = (id) => document.getElementById(id);
export const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
export const plural = (n, one, many) => `${n} ${n === 1 ? one : many || `${one}s`}`;
export const idList = (list) => {
  const ids = [...list].sort((a, b) => a - b);
  return ids.length > 8 ? `${ids.slice(0, 8).join(', ')}, …` : ids.join(', ');
};

// ---- times: always in the airport zone, with the offset shown ----------------------------------
let TZ = 'UTC';
/** The airport's zone, as the api answers it (msgx.airport.timezone). */
export const zone = () => TZ;
export const setZone = (z) => {
  TZ = z || TZ;
};
function wallParts(d) {
  const parts = {};
  const f = new Intl.DateTimeFormat('en-CA', { timeZone: TZ, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
  for (const p of f.formatToParts(d)) parts[p.type] = p.value;
  return parts;
}
/** The airport zone's offset at instant d, in minutes. */
function offsetMinutes(d) {
  const p = wallParts(d);
  const shown = Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second);
  return Math.round((shown - Math.floor(d.getTime() / 1000) * 1000) / 60000);
}
const offsetText = (off) => `${off < 0 ? '-' : '+'}${String(Math.floor(Math.abs(off) / 60)).padStart(2, '0')}:${String(Math.abs(off) % 60).padStart(2, '0')}`;
export function fmt(v) {
  if (v === null || v === undefined || v === '') return '';
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) return String(v);
  const parts = wallParts(d);
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${offsetText(offsetMinutes(d))}`;
}
/** 'YYYY-MM-DD HH:MM[:SS]' read in the airport zone → ISO-8601 with its offset; anything else is sent as typed (the API says what is wrong). */
export function airportIso(text) {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text);
  if (!m) return text;
  const wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0));
  let off = offsetMinutes(new Date(wall));
  off = offsetMinutes(new Date(wall - off * 60000)); // the offset at the instant itself (a zone change between)
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] || '00'}${offsetText(off)}`;
}
export const hhmm = (v) => fmt(v).slice(11, 16);

export function say(text, failed) {
  const el = $('action');
  el.textContent = text;
  el.className = failed ? 'fail' : '';
}

export function table(el, rows, cols, opts = {}) {
  if (!rows.length) {
    el.innerHTML = '<tr><td class="ok">none</td></tr>';
    return;
  }
  const head = `<tr>${cols.map((c) => `<th>${esc(c.label)}</th>`).join('')}</tr>`;
  const cell = (c, r, i) => `<td class="${esc(c.cls || '')}">${c.html ? c.html(r, i) : esc(c.get ? c.get(r) : r[c.key])}</td>`;
  el.innerHTML = head + rows.map((r, i) => `<tr class="${esc(opts.rowClass ? opts.rowClass(r) : '')}" data-i="${i}">${cols.map((c) => cell(c, r, i)).join('')}</tr>`).join('');
}

// ---- values of the flight state JSON -----------------------------------------------------------
export function val(v) {
  if (v === null || v === undefined) return '<span class="absent">(absent)</span>';
  if (typeof v === 'object') return `<span class="mono">${esc(JSON.stringify(v))}</span>`;
  return `<span class="mono">${esc(v)}</span>`;
}
export const changesHtml = (changes) => changes.map((c) => `<div><b>${esc(c.key)}</b>: <span class="before">${val(c.before)}</span> → <span class="after">${val(c.after)}</span></div>`).join('');
export const msgLink = (id) => `<a data-trace="${esc(id)}">${esc(id)}</a>`;
export const flidLink = (f) => `<a data-flid="${esc(f)}">${esc(f)}</a>`;
