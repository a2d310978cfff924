// Counts per state and reason (GET /ops/states), the paged list of one (GET /ops/list) and the
// replay of selected messages (POST /ops/replay, offered to a role that may call it), which asks
// before forcing DEAD(MALFORMED/PROTOCOL) ones.
import { $, esc, fmt, idList, msgLink, plural, say, setZone, table } from './format.js';
import { api, may } from './session.js';

const ORDER = ['DEAD', 'FAILED', 'PENDING', 'SKIPPED', 'SUCCEEDED'];
const REPLAY = 'POST /ops/replay';

export async function loadCounts() {
  const c = await api('/ops/states');
  setZone(c.timeZone);
  const byState = Object.fromEntries(c.states.map((s) => [s.state, s]));
  $('counts').innerHTML = ORDER.map((st) => {
    const s = byState[st] || { count: 0, reasons: [] };
    const reasons = s.reasons.map((r) => `<a class="chip st-${st}" data-state="${st}" data-reason="${esc(r.reason)}">${esc(r.reason || '(no reason)')} ${r.count}</a>`).join('');
    return `<div><a class="chip st-${st}" data-state="${st}">${st} ${s.count}</a></div><div>${reasons}</div>`;
  }).join('');
}

export const list = { state: null, reason: undefined, before: undefined, page: 1, rows: [], next: null, selected: new Map() };
const replayable = (r) => r.state === 'DEAD' || r.state === 'FAILED';
const needsForce = (r) => r.needsForce === true;
let pendingReplay = null;

export async function openList(state, reason, before, page) {
  Object.assign(list, { state, reason, before, page: page || 1 });
  if (!before) list.selected.clear();
  const qs = new URLSearchParams({ state, limit: '50' });
  if (reason !== undefined) qs.set('reason', reason);
  if (before) qs.set('before', String(before));
  const res = await api(`/ops/list?${qs}`);
  list.rows = res.messages;
  list.next = res.nextBefore;
  $('list-panel').className = '';
  $('list-actions').hidden = !may(REPLAY);
  $('confirm').hidden = true;
  $('list-title').textContent = `List: ${state}${reason !== undefined ? ` · ${reason || '(no reason)'}` : ' (every reason)'}`;
  const pick = (r) => (may(REPLAY) && replayable(r) ? `<input type="checkbox" class="pick" data-id="${esc(r.msgId)}"${list.selected.has(r.msgId) ? ' checked' : ''}>` : '');
  table(
    $('list'),
    list.rows,
    [
      { label: '', html: pick },
      { label: 'message', html: (r) => msgLink(r.msgId) },
      { label: 'state', key: 'state', cls: 'state' },
      { label: 'kind', key: 'kind' },
      { label: 'reason', key: 'reason', cls: 'reason' },
      { label: 'attempts', key: 'attempts' },
      { label: 'enqueued', get: (r) => fmt(r.enqueuedAt) },
      { label: 'terminal', get: (r) => fmt(r.terminalAt) },
      { label: 'backfill', key: 'backfill' },
    ],
    { rowClass: (r) => `st-${r.state}` },
  );
  $('next-page').disabled = list.next === null;
  $('page-info').textContent = `page ${list.page}, ${plural(list.rows.length, 'message')}${list.next === null ? ' (last page)' : ''}`;
  showSelected();
}
export const showSelected = () => {
  $('selected-count').textContent = list.selected.size ? `${plural(list.selected.size, 'message')} selected` : '';
};

/** Replays the rows; `after` reloads the page's data. */
async function replay(rows, force, after) {
  const ids = rows.map((r) => r.msgId);
  try {
    const res = await api('/ops/replay', { ids, force });
    const done = new Set(res.replayed);
    const missed = ids.filter((i) => !done.has(i));
    let text = done.size
      ? `Replayed ${plural(done.size, 'message')} (${idList([...done])}): back to PENDING, the pump applies ${done.size === 1 ? 'it' : 'them'} again in inbox order${force ? ' (with force)' : ''}.`
      : 'No message was replayed.';
    if (missed.length)
      text += ` ${plural(missed.length, 'message')} (${idList(missed)}) ${missed.length === 1 ? 'was' : 'were'} not replayed: only FAILED and DEAD messages can be, DEAD(MALFORMED/PROTOCOL) only with force; ${missed.length === 1 ? 'it' : 'they'} may have changed state meanwhile.`;
    say(text, done.size === 0);
  } catch (e) {
    say(`Replay failed, nothing was changed: ${e.message}.`, true);
  }
  list.selected.clear();
  await after();
  if (list.state) await openList(list.state, list.reason, undefined, 1);
}

function replaySelected(after) {
  const rows = [...list.selected.values()];
  if (!rows.length) return say('Select at least one FAILED or DEAD message first (the boxes in the list).', true);
  const forced = rows.filter(needsForce);
  const others = rows.filter((r) => !needsForce(r));
  if (!forced.length) return replay(rows, false, after);
  const which = forced.length === rows.length ? (forced.length === 1 ? 'The selected message' : `All ${forced.length} selected messages`) : `${forced.length} of the ${rows.length} selected messages`;
  $('confirm-text').textContent =
    `${which} (${idList(forced.map((r) => r.msgId))}) ${forced.length === 1 ? 'is' : 'are'} DEAD(MALFORMED/PROTOCOL): the pump found the message itself wrong, not a passing fault. ` +
    'Replaying with force sends the same inbox text through the decoder and the handlers again, as it is: unless the decoder, the rules or the AODB data were fixed since, it goes DEAD again with the same reason. ' +
    'Without force such messages are left DEAD. Replay with force?';
  $('confirm-others').hidden = others.length === 0;
  $('confirm-others').textContent = `Replay only the other ${plural(others.length, 'message')}`;
  $('confirm').hidden = false;
  pendingReplay = { forced, others, rows };
}

/** The list's buttons and boxes; `after` reloads the page's data after an action. */
export function wireList(after) {
  const listing = (p) => p.catch((e) => say(`Cannot list: ${e.message}`, true));
  document.addEventListener('change', (ev) => {
    const el = ev.target;
    if (!el.classList?.contains('pick')) return;
    const id = Number(el.dataset.id);
    const row = list.rows.find((r) => r.msgId === id);
    if (el.checked && row) list.selected.set(id, row);
    else list.selected.delete(id);
    showSelected();
  });
  $('select-all').addEventListener('click', () => {
    for (const r of list.rows) if (replayable(r)) list.selected.set(r.msgId, r);
    for (const b of document.querySelectorAll('#list .pick')) b.checked = true;
    showSelected();
  });
  $('replay-selected').addEventListener('click', () => replaySelected(after));
  const decided = (what) => {
    $('confirm').hidden = true;
    const p = pendingReplay;
    pendingReplay = null;
    if (!p) return;
    if (what === 'force') return replay(p.rows, true, after);
    if (what === 'others') return replay(p.others, false, after);
    say(`Nothing was replayed: you cancelled, so ${plural(p.forced.length, 'message')} (${idList(p.forced.map((r) => r.msgId))}) ${p.forced.length === 1 ? 'stays' : 'stay'} DEAD.`, false);
  };
  $('confirm-force').addEventListener('click', () => decided('force'));
  $('confirm-others').addEventListener('click', () => decided('others'));
  $('confirm-cancel').addEventListener('click', () => decided('cancel'));
  $('next-page').addEventListener('click', () => list.next !== null && listing(openList(list.state, list.reason, list.next, list.page + 1)));
  $('first-page').addEventListener('click', () => list.state && listing(openList(list.state, list.reason, undefined, 1)));
}
