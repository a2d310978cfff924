// A flight's timeline (GET /flights/:flid/timeline) and its state as of a moment (GET /flights/:flid?asOf=).
import { $, airportIso, changesHtml, esc, fmt, msgLink, plural, say, table, val } from './format.js';
import { api } from './session.js';

export async function showTimeline(flid) {
  $('q').value = flid;
  try {
    renderTimeline(await api(`/flights/${encodeURIComponent(flid)}/timeline`));
  } catch (e) {
    $('detail').innerHTML = `<div class="panel bad" id="timeline">${esc(e.status === 404 ? `Nothing is retained about flight ${flid}.` : `Cannot read the timeline: ${e.message}`)}</div>`;
  }
}

function renderTimeline(t) {
  const c = t.current;
  let head = `Flight ${t.flid} is ${t.status}`;
  if (c) head += `, version ${c.stateVersion}${c.operationDay ? `, operation day ${c.operationDay}` : ''}, last changed ${fmt(c.updatedAt)}${c.deletedAt ? `, deleted ${fmt(c.deletedAt)}` : ''}.`;
  else head += t.archived.length ? ': purged, its last state is in the history store.' : '.';
  const archived = t.archived.map((a) => `Archived version ${a.stateVersion} (${a.flightState}, rule ${a.purgeRule}) at ${fmt(a.archivedAt)}.`).join(' ');
  $('detail').innerHTML = `<div class="panel" id="timeline"><h2>Timeline of flight ${esc(t.flid)}</h2>
    <p id="timeline-summary">${esc(head)} ${esc(archived)} ${esc(plural(t.versions.length, 'version'))} retained.</p>
    <div id="asof-bar"><label>As of <input id="asof" size="26" placeholder="YYYY-MM-DD HH:MM (airport time)"></label>
      <button id="asof-btn" data-asof-flid="${esc(t.flid)}">State as of</button>
      <span class="muted">what the gateway held and published for this flight at that moment</span></div>
    <div id="asof-result"></div>
    <table id="timeline-versions"></table></div>`;
  const fields = (v) =>
    v.source === 'change' ? changesHtml(v.changes) || '<span class="muted">none</span>' : `<span class="muted">keys only (change record purged): </span>${esc(v.changedKeys.join(', '))}`;
  table(
    $('timeline-versions'),
    t.versions,
    [
      { label: 'version', key: 'stateVersion' },
      { label: 'what', get: (v) => v.op + (v.cause && v.cause !== 'MESSAGE' ? ` (${v.cause})` : '') },
      { label: 'message', html: (v) => (v.message ? msgLink(v.message.id) : '<span class="muted">purge</span>') },
      { label: 'TYPE/STYP', get: (v) => v.message?.kind || '' },
      { label: 'at', get: (v) => fmt(v.at) },
      { label: 'fields changed', html: fields },
    ],
    { rowClass: (v) => `op-${v.op}` },
  );
}

// ---- a flight as of a moment ---------------------------------------------------------------------
const NOT_STATE = { 'not-yet-created': 'No state', deleted: 'No state', purged: 'No state', 'unknown-flight': 'No state', 'outside-retention': 'Outside retention' };

export async function showAsOf(flid) {
  const typed = $('asof').value.trim();
  if (!typed) return say('Type a moment first, e.g. 2026-12-01 14:05 (airport time) or an ISO time with offset.', true);
  const out = $('asof-result');
  try {
    const f = await api(`/flights/${encodeURIComponent(flid)}?includeDeleted=true&asOf=${encodeURIComponent(airportIso(typed))}`);
    const a = f.AS_OF;
    const m = a.message || {};
    const detail = m.kind ? ` (${esc(m.kind)}${m.op ? `, ${esc(m.op)}` : ''}${m.cause && m.cause !== 'MESSAGE' ? `, ${esc(m.cause)}` : ''})` : '';
    const made = m.msgId ? `made by message ${msgLink(m.msgId)}${detail}` : 'made by no message';
    const keys = Object.keys(f).filter((k) => k !== 'AS_OF');
    out.innerHTML =
      `<p id="asof-summary" class="${f.STATE === 'DELETED' ? 'bad' : ''}">As of ${esc(fmt(a.at))} flight ${esc(f.FLID)} was <b>version ${esc(a.stateVersion)}</b> (${esc(f.STATE)}), ` +
      `held since ${esc(fmt(a.since))} ${a.until ? `until ${esc(fmt(a.until))}` : '(still the current version)'}, ${made}.</p><table id="asof-fields"></table>`;
    table(
      $('asof-fields'),
      keys.map((k) => ({ key: k, value: f[k] })),
      [
        { label: 'key', key: 'key' },
        { label: 'value', html: (r) => val(r.value) },
      ],
    );
  } catch (e) {
    const code = e.body?.code;
    out.innerHTML = `<p id="asof-summary" class="bad">${esc(code ? NOT_STATE[code] || code : 'Cannot read the state')}: ${esc(e.message)}</p>`;
  }
}
