// The head of the queue, abandoned backfills (resume), dispatch dead letters (send again) and the
// requests to the AODB (GET /ops/summary, GET /requests). The buttons appear for a role that may
// call their route.
import { $, esc, flidLink, fmt, msgLink, say, table, zone } from './format.js';
import { api, may } from './session.js';

function headHtml(h) {
  if (!h) return '<span class="ok">empty: nothing waiting</span>';
  return `<span class="${h.state === 'FAILED' ? 'bad' : ''}">message ${msgLink(h.msg_id)} ${esc(h.state)} ${esc(h.kind || '')}, ${esc(h.ageSeconds)} s old ${esc(h.reason || '')}</span>`;
}

export async function loadSummary() {
  const s = await api('/ops/summary');
  $('status').textContent = `loaded ${fmt(s.now)} (airport time, ${zone()})`;
  $('head').innerHTML = headHtml(s.head);
  const resume = may('POST /ops/backfill-resume') ? [{ label: '', html: (r) => `<button data-resume="${esc(r.msg_id)}">resume</button>` }] : [];
  table($('abandoned'), s.abandonedBackfills, [
    { label: 'message', html: (r) => msgLink(r.msg_id) },
    { label: 'kind', key: 'kind' },
    { label: 'reason', key: 'backfill_abandoned_reason', cls: 'reason' },
    { label: 'message', get: (r) => (r.never_applied ? 'never applied (raw-missing): when its row is back, replay it with force' : `${r.state} ${r.reason || ''}`), cls: 'reason' },
    { label: 'abandoned', get: (r) => fmt(r.backfill_abandoned_at) },
    { label: 'attempts', key: 'backfill_attempts' },
    ...resume,
  ]);
  const send = may('POST /ops/dispatch-replay') ? [{ label: '', html: (r) => `<button data-send="${esc(r.event_id)}">send again</button>` }] : [];
  table($('dead'), s.deadLetters, [
    { label: 'event', key: 'event_id' },
    { label: 'target', key: 'target' },
    { label: 'flight', html: (r) => flidLink(r.flid) },
    { label: 'version', key: 'state_version' },
    { label: 'attempts', key: 'attempts' },
    { label: 'held', key: 'held' },
    { label: 'last error', key: 'last_error', cls: 'reason' },
    ...send,
  ]);
  const recent = await api('/requests?limit=20');
  table($('recent-requests'), recent.requests, [
    { label: 'id', key: 'id' },
    { label: 'kind', get: (r) => `${r.kind} ${r.rtype || r.operationDay || ''}` },
    { label: 'state', key: 'state' },
    { label: 'created', get: (r) => fmt(r.createdAt) },
    { label: 'sent', get: (r) => fmt(r.sentAt) },
    { label: 'closed', get: (r) => fmt(r.closedAt) },
    { label: 'AODB error / why', key: 'errorText', cls: 'reason' },
  ]);
  table($('requests'), s.openRequests, [
    { label: 'id', key: 'id' },
    { label: 'kind', key: 'kind' },
    { label: 'rtype', key: 'rtype' },
    { label: 'operation day', key: 'operation_day' },
    { label: 'state', key: 'state' },
    { label: 'created', get: (r) => fmt(r.created_at) },
    { label: 'sent', get: (r) => fmt(r.sent_at) },
  ]);
}

export async function resumeBackfill(id) {
  try {
    const r = await api('/ops/backfill-resume', { ids: [Number(id)] });
    say(
      r.resumed.length
        ? `Backfill of message ${id} resumed: the processing time will be written back on the next round.`
        : `Backfill of message ${id} was not resumed: ${(r.untouched || []).join('; ') || 'it is no longer abandoned'}.`,
      r.resumed.length === 0,
    );
  } catch (e) {
    say(`Resume failed: ${e.message}.`, true);
  }
}

export async function sendAgain(id) {
  try {
    const r = await api('/ops/dispatch-replay', { eventIds: [Number(id)] });
    const n = Array.isArray(r.replayed) ? r.replayed.length : Number(r.replayed) || 0;
    say(n ? `Event ${id} will be sent again by its dispatcher.` : `Event ${id} was not sent again: ${(r.untouched || []).join('; ') || 'it is no longer a dead letter'}.`, n === 0);
  } catch (e) {
    say(`Send again failed: ${e.message}.`, true);
  }
}
