// What happened to a message (GET /ops/messages/:id): inbox row, identity, attempts, state, the
// flights it changed and the events it produced, and its backfill.
import { $, esc, flidLink, fmt, plural, table, val } from './format.js';
import { api } from './session.js';

export async function showTrace(id) {
  $('q').value = id;
  try {
    renderTrace(await api(`/ops/messages/${encodeURIComponent(id)}`));
  } catch (e) {
    const why = e.status === 404 ? `Message ${id} is unknown: not in the inbox and not in PROC_STATE (it may be purged).` : `Cannot read the trace: ${e.message}`;
    $('detail').innerHTML = `<div class="panel bad" id="trace">${esc(why)}</div>`;
  }
}

function summaryOf(t) {
  const s = t.state;
  const kind = s?.kind || (t.inbox?.type ? `${t.inbox.type}/${t.inbox.subtype || ''}` : 'kind not known yet');
  const received = t.inbox?.received || s?.received;
  const sent = t.events.filter((e) => e.state === 'SENT').length;
  let summary = `Message ${t.msgId} (${kind})${received ? ` was received ${fmt(received)}` : ''}; `;
  summary += s
    ? `it is ${s.state}${s.reason ? ` — ${s.reason}` : ''}${s.terminalAt ? ` since ${fmt(s.terminalAt)}` : ''}, after ${plural(t.attempts.length, 'failed attempt')}. `
    : 'it is not in PROC_STATE (not taken in yet, or purged). ';
  const flids = t.flights.length ? ` (${[...new Set(t.flights.map((f) => f.flid))].join(', ')})` : '';
  return `${summary}It changed ${plural(t.flights.length, 'flight version')}${flids} and produced ${plural(t.events.length, 'event')}, ${sent} sent.`;
}

function inboxHtml(inb) {
  if (inb.present === false) return '<p class="muted">The inbox row is gone (purged after its retention).</p>';
  if (inb.present !== true) return `<p class="bad">${esc(inb.error)}</p>`;
  const processed = inb.processed ? esc(fmt(inb.processed)) : '<span class="muted">not yet</span>';
  return `<table><tr><th>received</th><th>processed (written back)</th><th>sender / seq</th><th>TYPE/STYP</th><th>status</th><th>size</th></tr>
    <tr><td>${esc(fmt(inb.received))}</td><td>${processed}</td><td>${esc(inb.sender)} / ${esc(inb.sequence)}</td><td>${esc(inb.type)}/${esc(inb.subtype)}</td><td>${esc(inb.status)}</td><td>${esc(inb.chars)} chars</td></tr></table>
    <details><summary>message text (first 4000 characters)</summary><pre class="mono">${esc(inb.excerpt)}</pre></details>`;
}

function backfillText(b) {
  if (!b) return 'No backfill record.';
  if (b.status === 'WRITTEN') return `The processing time ${fmt(b.inboxValue)} was written back to the inbox (at ${fmt(b.at)}).`;
  if (b.status === 'KEPT_EARLIER')
    return `The inbox keeps the processing time ${fmt(b.inboxValue)} of an earlier outcome of this message (before a replay): the AODB sees when it was first processed; this outcome's time is not written over it (checked at ${fmt(b.at)}).`;
  if (b.status === 'ABANDONED') return `The backfill was abandoned at ${fmt(b.abandonedAt)} (${b.abandonedReason}) after ${plural(b.attempts, 'attempt')}; resume it from "Backfill abandoned" below.`;
  if (b.status === 'OWED') return `The processing time is still owed to the inbox (${plural(b.attempts, 'attempt')} so far${b.nextAt ? `, next ${fmt(b.nextAt)}` : ''}).`;
  return 'No backfill yet: the message is not terminal.';
}

const SHOWN = 100; // a snapshot can change thousands of flights: the page shows the first ones, the API has all

function flightsHtml(t) {
  const one = (f) => {
    const rows =
      f.changes.map((c) => `<tr><td class="mono">${esc(c.key)}</td><td>${val(c.before)}</td><td>${val(c.after)}</td></tr>`).join('') || '<tr><td colspan="3" class="muted">no field changed</td></tr>';
    return `<h3 class="change">Flight ${flidLink(f.flid)} version ${esc(f.stateVersion)} — ${esc(f.op)}${f.cause !== 'MESSAGE' ? ` (${esc(f.cause)})` : ''} at ${esc(fmt(f.at))}</h3>
      <table><tr><th>field</th><th>before</th><th>after</th></tr>${rows}</table>`;
  };
  const more = t.flights.length > SHOWN ? `<p class="muted">… and ${t.flights.length - SHOWN} more flight versions (all of them: GET /ops/messages/${esc(t.msgId)}).</p>` : '';
  return (t.flights.slice(0, SHOWN).map(one).join('') || '<p class="muted">This message changed no flight.</p>') + more;
}

function stateHtml(s) {
  if (!s) return '<p class="muted">no PROC_STATE row</p>';
  const when = s.terminalAt ? `terminal ${esc(fmt(s.terminalAt))}` : s.nextAttemptAt ? `next attempt ${esc(fmt(s.nextAttemptAt))}` : '';
  return `<table><tr class="st-${esc(s.state)}"><td class="state">${esc(s.state)}</td><td class="reason">${esc(s.reason || '')}</td><td>enqueued ${esc(fmt(s.enqueuedAt))}</td><td>${when}</td></tr></table>`;
}

function renderTrace(t) {
  $('detail').innerHTML = `<div class="panel" id="trace">
    <h2>Trace of message ${esc(t.msgId)}</h2>
    <p id="trace-summary">${esc(summaryOf(t))}</p>
    <h3>Inbox row</h3>${inboxHtml(t.inbox)}
    <h3>Identity</h3><p class="mono">${esc(t.identity || '(not bound)')}</p>
    <h3>Trace</h3><p class="mono" id="trace-id">${t.traceUrl ? `<a href="${esc(t.traceUrl)}" target="_blank" rel="noopener">${esc(t.traceId)}</a>` : esc(t.traceId || '(not traced)')}</p>
    <h3>State</h3>${stateHtml(t.state)}
    <h3>Failed attempts</h3><table id="trace-attempts"></table>
    <h3>Flights changed</h3><div id="trace-flights">${flightsHtml(t)}</div>
    <h3>Events produced</h3><table id="trace-events"></table>
    <h3>Backfill</h3><p id="trace-backfill">${esc(backfillText(t.backfill))}</p></div>`;
  table($('trace-attempts'), t.attempts, [
    { label: 'time', get: (a) => fmt(a.at) },
    { label: 'class', key: 'errorClass' },
    { label: 'detail', key: 'detail', cls: 'reason' },
    { label: 'then', key: 'nextState' },
  ]);
  table($('trace-events'), t.events, [
    { label: 'event', key: 'eventId' },
    { label: 'topic', key: 'topic' },
    { label: 'flight', html: (e) => flidLink(e.flid) },
    { label: 'version', key: 'stateVersion' },
    { label: 'what', get: (e) => (e.tombstone ? 'tombstone (delete)' : e.target === 'schd' ? 'complete state' : 'change') },
    { label: 'state', key: 'state' },
    { label: 'partition', key: 'partition' },
    { label: 'offset', key: 'offset' },
    { label: 'sent', get: (e) => fmt(e.sentAt) },
    // A held event has not been tried since its flight's DEAD event stopped it: name that event, not a stale error.
    { label: 'last error', get: (e) => (e.heldBy ? `waiting behind DEAD event ${e.heldBy} of flight ${e.flid}` : e.lastError || ''), cls: 'reason' },
  ]);
}
