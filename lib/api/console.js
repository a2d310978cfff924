// The ops console's script (served at /ops/console.js; the page has no inline script). Plain
// browser JavaScript, no framework, no CDN. Every read and action goes through the bearer-token
// routes; the token lives in sessionStorage (this tab only), never in the URL.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = 'msgx-token';
  const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
  const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many || one + 's'}`;
  const idList = (list) => {
    const ids = [...list].sort((a, b) => a - b);
    return ids.length > 8 ? ids.slice(0, 8).join(', ') + ', …' : ids.join(', ');
  };
  let TZ = 'UTC';

  async function api(path, body) {
    const r = await fetch(path, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: 'Bearer ' + token(), ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const j = await r.json().catch(() => ({}));
    if (!r.ok) throw Object.assign(new Error(j.reason || j.message || 'HTTP ' + r.status), { status: r.status, body: j });
    return j;
  }

  // ---- times: always in the airport zone, with the offset shown --------------------------------
  function wallParts(d) {
    const parts = {};
    for (const p of new Intl.DateTimeFormat('en-CA', {
      timeZone: TZ,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    }).formatToParts(d))
      parts[p.type] = p.value;
    return parts;
  }
  /** The airport zone's offset at instant d, in minutes. */
  function offsetMinutes(d) {
    const p = wallParts(d);
    const shown = Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second);
    return Math.round((shown - Math.floor(d.getTime() / 1000) * 1000) / 60000);
  }
  const offsetText = (off) => (off < 0 ? '-' : '+') + String(Math.floor(Math.abs(off) / 60)).padStart(2, '0') + ':' + String(Math.abs(off) % 60).padStart(2, '0');
  function fmt(v) {
    if (v === null || v === undefined || v === '') return '';
    const d = new Date(v);
    if (Number.isNaN(d.getTime())) return String(v);
    const parts = wallParts(d);
    return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${offsetText(offsetMinutes(d))}`;
  }
  /** 'YYYY-MM-DD HH:MM[:SS]' read in the airport zone → ISO-8601 with its offset; anything else is sent as typed (the API says what is wrong). */
  function airportIso(text) {
    const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text);
    if (!m) return text;
    const wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0));
    let off = offsetMinutes(new Date(wall));
    off = offsetMinutes(new Date(wall - off * 60000)); // the offset at the instant itself (a zone change between)
    return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] || '00'}${offsetText(off)}`;
  }
  const hhmm = (v) => fmt(v).slice(11, 16);

  function say(text, failed) {
    const el = $('action');
    el.textContent = text;
    el.className = failed ? 'fail' : '';
  }

  function table(el, rows, cols, opts = {}) {
    if (!rows.length) {
      el.innerHTML = '<tr><td class="ok">none</td></tr>';
      return;
    }
    el.innerHTML =
      '<tr>' +
      cols.map((c) => '<th>' + esc(c.label) + '</th>').join('') +
      '</tr>' +
      rows
        .map(
          (r, i) =>
            '<tr class="' +
            esc(opts.rowClass ? opts.rowClass(r) : '') +
            '" data-i="' +
            i +
            '">' +
            cols.map((c) => '<td class="' + esc(c.cls || '') + '">' + (c.html ? c.html(r, i) : esc(c.get ? c.get(r) : r[c.key])) + '</td>').join('') +
            '</tr>',
        )
        .join('');
  }

  // ---- values of the flight state JSON --------------------------------------------------------
  function val(v) {
    if (v === null || v === undefined) return '<span class="absent">(absent)</span>';
    if (typeof v === 'object') return '<span class="mono">' + esc(JSON.stringify(v)) + '</span>';
    return '<span class="mono">' + esc(v) + '</span>';
  }
  const changesHtml = (changes) =>
    changes.map((c) => '<div><b>' + esc(c.key) + '</b>: <span class="before">' + val(c.before) + '</span> → <span class="after">' + val(c.after) + '</span></div>').join('');
  const msgLink = (id) => '<a data-trace="' + esc(id) + '">' + esc(id) + '</a>';
  const flidLink = (f) => '<a data-flid="' + esc(f) + '">' + esc(f) + '</a>';

  // ---- search: trace and timeline ------------------------------------------------------------
  async function showTrace(id) {
    $('q').value = id;
    try {
      const t = await api('/ops/messages/' + encodeURIComponent(id));
      renderTrace(t);
    } catch (e) {
      $('detail').innerHTML =
        '<div class="panel bad" id="trace">' +
        esc(e.status === 404 ? `Message ${id} is unknown: not in the inbox and not in PROC_STATE (it may be purged).` : 'Cannot read the trace: ' + e.message) +
        '</div>';
    }
  }

  function renderTrace(t) {
    const s = t.state;
    const kind = s?.kind || (t.inbox?.type ? `${t.inbox.type}/${t.inbox.subtype || ''}` : 'kind not known yet');
    const received = t.inbox?.received || s?.received;
    const sent = t.events.filter((e) => e.state === 'SENT').length;
    let summary = `Message ${t.msgId} (${kind})` + (received ? ` was received ${fmt(received)}` : '') + '; ';
    summary += s
      ? `it is ${s.state}${s.reason ? ' — ' + s.reason : ''}${s.terminalAt ? ' since ' + fmt(s.terminalAt) : ''}, after ${plural(t.attempts.length, 'failed attempt')}. `
      : 'it is not in PROC_STATE (not taken in yet, or purged). ';
    summary +=
      `It changed ${plural(t.flights.length, 'flight version')}` +
      (t.flights.length ? ` (${[...new Set(t.flights.map((f) => f.flid))].join(', ')})` : '') +
      ` and produced ${plural(t.events.length, 'event')}, ${sent} sent.`;
    const inb = t.inbox;
    const inboxHtml =
      inb.present === true
        ? `<table><tr><th>received</th><th>processed (written back)</th><th>sender / seq</th><th>TYPE/STYP</th><th>status</th><th>size</th></tr>
          <tr><td>${esc(fmt(inb.received))}</td><td>${inb.processed ? esc(fmt(inb.processed)) : '<span class="muted">not yet</span>'}</td><td>${esc(inb.sender)} / ${esc(inb.sequence)}</td><td>${esc(inb.type)}/${esc(inb.subtype)}</td><td>${esc(inb.status)}</td><td>${esc(inb.chars)} chars</td></tr></table>
          <details><summary>message text (first 4000 characters)</summary><pre class="mono">${esc(inb.excerpt)}</pre></details>`
        : inb.present === false
          ? '<p class="muted">The inbox row is gone (purged after its retention).</p>'
          : `<p class="bad">${esc(inb.error)}</p>`;
    const b = t.backfill;
    const backfill = !b
      ? 'No backfill record.'
      : b.status === 'WRITTEN'
        ? `The processing time ${fmt(b.inboxValue)} was written back to the inbox (at ${fmt(b.at)}).`
        : b.status === 'KEPT_EARLIER'
          ? `The inbox keeps the processing time ${fmt(b.inboxValue)} of an earlier outcome of this message (before a replay): the AODB sees when it was first processed; this outcome's time is not written over it (checked at ${fmt(b.at)}).`
          : b.status === 'ABANDONED'
            ? `The backfill was abandoned at ${fmt(b.abandonedAt)} (${b.abandonedReason}) after ${plural(b.attempts, 'attempt')}; resume it from "Backfill abandoned" below.`
            : b.status === 'OWED'
              ? `The processing time is still owed to the inbox (${plural(b.attempts, 'attempt')} so far${b.nextAt ? ', next ' + fmt(b.nextAt) : ''}).`
              : 'No backfill yet: the message is not terminal.';
    const SHOWN = 100; // a snapshot can change thousands of flights: the page shows the first ones, the API has all
    const flights = t.flights
      .slice(0, SHOWN)
      .map(
        (f) => `<h3 class="change">Flight ${flidLink(f.flid)} version ${esc(f.stateVersion)} — ${esc(f.op)}${f.cause !== 'MESSAGE' ? ' (' + esc(f.cause) + ')' : ''} at ${esc(fmt(f.at))}</h3>
        <table><tr><th>field</th><th>before</th><th>after</th></tr>${f.changes.map((c) => `<tr><td class="mono">${esc(c.key)}</td><td>${val(c.before)}</td><td>${val(c.after)}</td></tr>`).join('') || '<tr><td colspan="3" class="muted">no field changed</td></tr>'}</table>`,
      )
      .join('');
    $('detail').innerHTML = `<div class="panel" id="trace">
      <h2>Trace of message ${esc(t.msgId)}</h2>
      <p id="trace-summary">${esc(summary)}</p>
      <h3>Inbox row</h3>${inboxHtml}
      <h3>Identity</h3><p class="mono">${esc(t.identity || '(not bound)')}</p>
      <h3>Trace</h3><p class="mono" id="trace-id">${t.traceUrl ? `<a href="${esc(t.traceUrl)}" target="_blank" rel="noopener">${esc(t.traceId)}</a>` : esc(t.traceId || '(not traced)')}</p>
      <h3>State</h3>${s ? `<table><tr class="st-${esc(s.state)}"><td class="state">${esc(s.state)}</td><td class="reason">${esc(s.reason || '')}</td><td>enqueued ${esc(fmt(s.enqueuedAt))}</td><td>${s.terminalAt ? 'terminal ' + esc(fmt(s.terminalAt)) : s.nextAttemptAt ? 'next attempt ' + esc(fmt(s.nextAttemptAt)) : ''}</td></tr></table>` : '<p class="muted">no PROC_STATE row</p>'}
      <h3>Failed attempts</h3><table id="trace-attempts"></table>
      <h3>Flights changed</h3><div id="trace-flights">${flights || '<p class="muted">This message changed no flight.</p>'}${t.flights.length > SHOWN ? `<p class="muted">… and ${t.flights.length - SHOWN} more flight versions (all of them: GET /ops/messages/${esc(t.msgId)}).</p>` : ''}</div>
      <h3>Events produced</h3><table id="trace-events"></table>
      <h3>Backfill</h3><p id="trace-backfill">${esc(backfill)}</p></div>`;
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

  async function showTimeline(flid) {
    $('q').value = flid;
    try {
      renderTimeline(await api('/flights/' + encodeURIComponent(flid) + '/timeline'));
    } catch (e) {
      $('detail').innerHTML = '<div class="panel bad" id="timeline">' + esc(e.status === 404 ? `Nothing is retained about flight ${flid}.` : 'Cannot read the timeline: ' + e.message) + '</div>';
    }
  }

  function renderTimeline(t) {
    const c = t.current;
    let head = `Flight ${t.flid} is ${t.status}`;
    if (c) head += `, version ${c.stateVersion}${c.operationDay ? ', operation day ' + c.operationDay : ''}, last changed ${fmt(c.updatedAt)}${c.deletedAt ? ', deleted ' + fmt(c.deletedAt) : ''}.`;
    else head += t.archived.length ? ': purged, its last state is in the history store.' : '.';
    const archived = t.archived.map((a) => `Archived version ${a.stateVersion} (${a.flightState}, rule ${a.purgeRule}) at ${fmt(a.archivedAt)}.`).join(' ');
    $('detail').innerHTML = `<div class="panel" id="timeline"><h2>Timeline of flight ${esc(t.flid)}</h2>
      <p id="timeline-summary">${esc(head)} ${esc(archived)} ${esc(plural(t.versions.length, 'version'))} retained.</p>
      <div id="asof-bar"><label>As of <input id="asof" size="26" placeholder="YYYY-MM-DD HH:MM (airport time)"></label>
        <button id="asof-btn" data-asof-flid="${esc(t.flid)}">State as of</button>
        <span class="muted">what the gateway held and published for this flight at that moment</span></div>
      <div id="asof-result"></div>
      <table id="timeline-versions"></table></div>`;
    table(
      $('timeline-versions'),
      t.versions,
      [
        { label: 'version', key: 'stateVersion' },
        { label: 'what', get: (v) => v.op + (v.cause && v.cause !== 'MESSAGE' ? ' (' + v.cause + ')' : '') },
        { label: 'message', html: (v) => (v.message ? msgLink(v.message.id) : '<span class="muted">purge</span>') },
        { label: 'TYPE/STYP', get: (v) => v.message?.kind || '' },
        { label: 'at', get: (v) => fmt(v.at) },
        {
          label: 'fields changed',
          html: (v) =>
            v.source === 'change' ? changesHtml(v.changes) || '<span class="muted">none</span>' : '<span class="muted">keys only (change record purged): </span>' + esc(v.changedKeys.join(', ')),
        },
      ],
      { rowClass: (v) => 'op-' + v.op },
    );
  }

  // ---- a flight as of a moment (GET /flights/:flid?asOf=) -------------------------------------
  const NOT_STATE = { 'not-yet-created': 'No state', deleted: 'No state', purged: 'No state', 'unknown-flight': 'No state', 'outside-retention': 'Outside retention' };
  async function showAsOf(flid) {
    const typed = $('asof').value.trim();
    if (!typed) return say('Type a moment first, e.g. 2026-12-01 14:05 (airport time) or an ISO time with offset.', true);
    const when = airportIso(typed);
    const out = $('asof-result');
    try {
      const f = await api('/flights/' + encodeURIComponent(flid) + '?includeDeleted=true&asOf=' + encodeURIComponent(when));
      const a = f.AS_OF;
      const m = a.message || {};
      const made = m.msgId
        ? `made by message ${msgLink(m.msgId)}${m.kind ? ' (' + esc(m.kind) + (m.op ? ', ' + esc(m.op) : '') + (m.cause && m.cause !== 'MESSAGE' ? ', ' + esc(m.cause) : '') + ')' : ''}`
        : 'made by no message';
      const keys = Object.keys(f).filter((k) => k !== 'AS_OF');
      out.innerHTML =
        `<p id="asof-summary" class="${f.STATE === 'DELETED' ? 'bad' : ''}">As of ${esc(fmt(a.at))} flight ${esc(f.FLID)} was <b>version ${esc(a.stateVersion)}</b> (${esc(f.STATE)}), ` +
        `held since ${esc(fmt(a.since))} ${a.until ? 'until ' + esc(fmt(a.until)) : '(still the current version)'}, ${made}.</p><table id="asof-fields"></table>`;
      table(
        $('asof-fields'),
        keys.map((k) => ({ key: k, value: f[k] })),
        [
          { label: 'key', key: 'key' },
          { label: 'value', html: (r) => val(r.value) },
        ],
      );
    } catch (e) {
      const code = e.body && e.body.code;
      out.innerHTML = `<p id="asof-summary" class="bad">${esc(code ? NOT_STATE[code] || code : 'Cannot read the state')}: ${esc(e.message)}</p>`;
    }
  }

  // ---- counts per state and reason; the paged list --------------------------------------------
  const ORDER = ['DEAD', 'FAILED', 'PENDING', 'SKIPPED', 'SUCCEEDED'];
  async function loadCounts() {
    const c = await api('/ops/states');
    TZ = c.timeZone || TZ;
    const byState = Object.fromEntries(c.states.map((s) => [s.state, s]));
    $('counts').innerHTML = ORDER.map((st) => {
      const s = byState[st] || { count: 0, reasons: [] };
      return (
        `<div><a class="chip st-${st}" data-state="${st}">${st} ${s.count}</a></div><div>` +
        s.reasons.map((r) => `<a class="chip st-${st}" data-state="${st}" data-reason="${esc(r.reason)}">${esc(r.reason || '(no reason)')} ${r.count}</a>`).join('') +
        '</div>'
      );
    }).join('');
  }

  const list = { state: null, reason: undefined, before: undefined, page: 1, rows: [], next: null, selected: new Map() };
  const replayable = (r) => r.state === 'DEAD' || r.state === 'FAILED';
  const needsForce = (r) => r.needsForce === true;

  async function openList(state, reason, before, page) {
    Object.assign(list, { state, reason, before, page: page || 1 });
    if (!before) list.selected.clear();
    const qs = new URLSearchParams({ state, limit: '50' });
    if (reason !== undefined) qs.set('reason', reason);
    if (before) qs.set('before', String(before));
    const res = await api('/ops/list?' + qs);
    list.rows = res.messages;
    list.next = res.nextBefore;
    $('list-panel').className = '';
    $('confirm').hidden = true;
    $('list-title').textContent = `List: ${state}${reason !== undefined ? ' · ' + (reason || '(no reason)') : ' (every reason)'}`;
    table(
      $('list'),
      list.rows,
      [
        { label: '', html: (r) => (replayable(r) ? `<input type="checkbox" class="pick" data-id="${esc(r.msgId)}"${list.selected.has(r.msgId) ? ' checked' : ''}>` : '') },
        { label: 'message', html: (r) => msgLink(r.msgId) },
        { label: 'state', key: 'state', cls: 'state' },
        { label: 'kind', key: 'kind' },
        { label: 'reason', key: 'reason', cls: 'reason' },
        { label: 'attempts', key: 'attempts' },
        { label: 'enqueued', get: (r) => fmt(r.enqueuedAt) },
        { label: 'terminal', get: (r) => fmt(r.terminalAt) },
        { label: 'backfill', key: 'backfill' },
      ],
      { rowClass: (r) => 'st-' + r.state },
    );
    $('next-page').disabled = list.next === null;
    $('page-info').textContent = `page ${list.page}, ${plural(list.rows.length, 'message')}${list.next === null ? ' (last page)' : ''}`;
    showSelected();
  }
  const showSelected = () => ($('selected-count').textContent = list.selected.size ? plural(list.selected.size, 'message') + ' selected' : '');

  async function replay(rows, force) {
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
    await refresh();
    if (list.state) await openList(list.state, list.reason, undefined, 1);
  }

  function replaySelected() {
    const rows = [...list.selected.values()];
    if (!rows.length) return say('Select at least one FAILED or DEAD message first (the boxes in the list).', true);
    const forced = rows.filter(needsForce);
    const others = rows.filter((r) => !needsForce(r));
    if (!forced.length) return replay(rows, false);
    $('confirm-text').textContent =
      `${forced.length === rows.length ? (forced.length === 1 ? 'The selected message' : `All ${forced.length} selected messages`) : `${forced.length} of the ${rows.length} selected messages`} (${idList(forced.map((r) => r.msgId))}) ${forced.length === 1 ? 'is' : 'are'} DEAD(MALFORMED/PROTOCOL): the pump found the message itself wrong, not a passing fault. ` +
      'Replaying with force sends the same inbox text through the decoder and the handlers again, as it is: unless the decoder, the rules or the AODB data were fixed since, it goes DEAD again with the same reason. ' +
      'Without force such messages are left DEAD. Replay with force?';
    $('confirm-others').hidden = others.length === 0;
    $('confirm-others').textContent = `Replay only the other ${plural(others.length, 'message')}`;
    $('confirm').hidden = false;
    pendingReplay = { forced, others, rows };
  }
  let pendingReplay = null;

  // ---- charts: inline SVG from /ops/last-hour (Postgres; no Prometheus needed) -----------------
  const W = 360,
    H = 120,
    L = 34,
    R = 6,
    T = 8,
    B = 18;
  function chart(svg, minutes, series, opts = {}) {
    const n = minutes.length;
    const max = Math.max(1, ...series.flatMap((s) => s.values.filter((v) => v !== null)).concat(opts.stacked ? minutes.map((_, i) => series.reduce((a, s) => a + (s.values[i] || 0), 0)) : []));
    const x = (i) => L + (i * (W - L - R)) / Math.max(1, n - 1);
    const y = (v) => T + (H - T - B) * (1 - v / max);
    let out =
      `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#999"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#999"/>` +
      `<text x="${L - 3}" y="${T + 8}" font-size="9" text-anchor="end" fill="#555">${esc(Math.round(max * 10) / 10)}</text><text x="${L - 3}" y="${H - B}" font-size="9" text-anchor="end" fill="#555">0</text>` +
      `<text x="${L}" y="${H - 4}" font-size="9" fill="#555">${esc(hhmm(minutes[0]))}</text><text x="${W - R}" y="${H - 4}" font-size="9" text-anchor="end" fill="#555">${esc(hhmm(minutes[n - 1]))}</text>`;
    if (opts.stacked) {
      const bw = Math.max(1, (W - L - R) / n - 1);
      for (let i = 0; i < n; i++) {
        let base = 0;
        for (const s of series) {
          const v = s.values[i] || 0;
          if (v > 0)
            out += `<rect x="${(x(i) - bw / 2).toFixed(1)}" y="${y(base + v).toFixed(1)}" width="${bw.toFixed(1)}" height="${(y(base) - y(base + v)).toFixed(1)}" fill="${s.color}"><title>${esc(hhmm(minutes[i]) + ' ' + s.label + ' ' + v)}</title></rect>`;
          base += v;
        }
      }
    } else {
      for (const s of series) {
        // one polyline per run of known values: a minute without data is a gap, not a slope
        const runs = [[]];
        s.values.forEach((v, i) => (v === null ? runs.push([]) : runs[runs.length - 1].push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`)));
        for (const pts of runs.filter((r) => r.length)) {
          out +=
            pts.length === 1
              ? `<circle cx="${pts[0].split(',')[0]}" cy="${pts[0].split(',')[1]}" r="1.8" fill="${s.color}"/>`
              : `<polyline points="${pts.join(' ')}" fill="none" stroke="${s.color}" stroke-width="1.5"/>`;
        }
      }
    }
    svg.innerHTML = out;
  }
  const legend = (el, series) =>
    (el.innerHTML = series.map((s) => `<span><svg class="swatch" width="10" height="10" viewBox="0 0 10 10"><rect width="10" height="10" fill="${s.color}"/></svg> ${esc(s.label)}</span>`).join(''));

  async function loadCharts() {
    const h = await api('/ops/last-hour');
    TZ = h.timeZone || TZ;
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

  // ---- the summary (head, abandoned backfills, dead letters, requests) ------------------------
  async function loadSummary() {
    const s = await api('/ops/summary');
    $('status').textContent = 'loaded ' + fmt(s.now) + ' (airport time, ' + TZ + ')';
    $('head').innerHTML = s.head
      ? '<span class="' +
        (s.head.state === 'FAILED' ? 'bad' : '') +
        '">message ' +
        msgLink(s.head.msg_id) +
        ' ' +
        esc(s.head.state) +
        ' ' +
        esc(s.head.kind || '') +
        ', ' +
        esc(s.head.ageSeconds) +
        ' s old ' +
        esc(s.head.reason || '') +
        '</span>'
      : '<span class="ok">empty: nothing waiting</span>';
    table($('abandoned'), s.abandonedBackfills, [
      { label: 'message', html: (r) => msgLink(r.msg_id) },
      { label: 'kind', key: 'kind' },
      { label: 'reason', key: 'backfill_abandoned_reason', cls: 'reason' },
      {
        label: 'message',
        get: (r) => (r.never_applied ? `never applied (raw-missing): when its row is back, replay it with force` : `${r.state} ${r.reason || ''}`),
        cls: 'reason',
      },
      { label: 'abandoned', get: (r) => fmt(r.backfill_abandoned_at) },
      { label: 'attempts', key: 'backfill_attempts' },
      { label: '', html: (r) => `<button data-resume="${esc(r.msg_id)}">resume</button>` },
    ]);
    table($('dead'), s.deadLetters, [
      { label: 'event', key: 'event_id' },
      { label: 'target', key: 'target' },
      { label: 'flight', html: (r) => flidLink(r.flid) },
      { label: 'version', key: 'state_version' },
      { label: 'attempts', key: 'attempts' },
      { label: 'held', key: 'held' },
      { label: 'last error', key: 'last_error', cls: 'reason' },
      { label: '', html: (r) => `<button data-send="${esc(r.event_id)}">send again</button>` },
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

  async function refresh() {
    try {
      await loadCounts();
      await loadSummary();
    } catch (e) {
      $('status').innerHTML = '<span class="bad">' + esc('cannot load: ' + e.message) + '</span>';
      return false;
    }
    return true;
  }
  async function refreshCharts() {
    try {
      await loadCharts();
    } catch (e) {
      $('charts-time').textContent = '(charts cannot load: ' + e.message + ')';
    }
  }

  // ---- wiring (event delegation; no inline handlers) ------------------------------------------
  document.addEventListener('click', async (ev) => {
    const el = ev.target.closest('a,button');
    if (!el) return;
    if (el.dataset.trace) return showTrace(el.dataset.trace);
    if (el.dataset.flid) return showTimeline(el.dataset.flid);
    if (el.dataset.asofFlid) return showAsOf(el.dataset.asofFlid);
    if (el.dataset.state) {
      try {
        await openList(el.dataset.state, el.dataset.reason, undefined, 1);
      } catch (e) {
        say('Cannot list: ' + e.message, true);
      }
      return;
    }
    if (el.dataset.resume) {
      el.disabled = true;
      try {
        const r = await api('/ops/backfill-resume', { ids: [Number(el.dataset.resume)] });
        say(
          r.resumed.length
            ? `Backfill of message ${el.dataset.resume} resumed: the processing time will be written back on the next round.`
            : `Backfill of message ${el.dataset.resume} was not resumed: ${(r.untouched || []).join('; ') || 'it is no longer abandoned'}.`,
          r.resumed.length === 0,
        );
      } catch (e) {
        say(`Resume failed: ${e.message}.`, true);
      }
      return refresh();
    }
    if (el.dataset.send) {
      el.disabled = true;
      try {
        const r = await api('/ops/dispatch-replay', { eventIds: [Number(el.dataset.send)] });
        const n = Array.isArray(r.replayed) ? r.replayed.length : Number(r.replayed) || 0;
        say(
          n ? `Event ${el.dataset.send} will be sent again by its dispatcher.` : `Event ${el.dataset.send} was not sent again: ${(r.untouched || []).join('; ') || 'it is no longer a dead letter'}.`,
          n === 0,
        );
      } catch (e) {
        say(`Send again failed: ${e.message}.`, true);
      }
      return refresh();
    }
  });
  document.addEventListener('change', (ev) => {
    const el = ev.target;
    if (!el.classList || !el.classList.contains('pick')) return;
    const id = Number(el.dataset.id);
    const row = list.rows.find((r) => r.msgId === id);
    if (el.checked && row) list.selected.set(id, row);
    else list.selected.delete(id);
    showSelected();
  });
  $('select-all').addEventListener('click', () => {
    for (const r of list.rows) if (replayable(r)) list.selected.set(r.msgId, r);
    document.querySelectorAll('#list .pick').forEach((b) => (b.checked = true));
    showSelected();
  });
  $('replay-selected').addEventListener('click', () => replaySelected());
  $('confirm-force').addEventListener('click', () => {
    $('confirm').hidden = true;
    if (pendingReplay) replay(pendingReplay.rows, true);
    pendingReplay = null;
  });
  $('confirm-others').addEventListener('click', () => {
    $('confirm').hidden = true;
    if (pendingReplay) replay(pendingReplay.others, false);
    pendingReplay = null;
  });
  $('confirm-cancel').addEventListener('click', () => {
    $('confirm').hidden = true;
    if (pendingReplay)
      say(
        `Nothing was replayed: you cancelled, so ${plural(pendingReplay.forced.length, 'message')} (${idList(pendingReplay.forced.map((r) => r.msgId))}) ${pendingReplay.forced.length === 1 ? 'stays' : 'stay'} DEAD.`,
        false,
      );
    pendingReplay = null;
  });
  $('next-page').addEventListener('click', () => list.next !== null && openList(list.state, list.reason, list.next, list.page + 1).catch((e) => say('Cannot list: ' + e.message, true)));
  $('first-page').addEventListener('click', () => list.state && openList(list.state, list.reason, undefined, 1).catch((e) => say('Cannot list: ' + e.message, true)));
  const search = (which) => {
    const q = $('q').value.trim();
    if (!/^\d{1,30}$/.test(q)) return say('Type a message id or a FLID (digits only) first.', true);
    return which === 'trace' ? showTrace(q) : showTimeline(q);
  };
  $('trace-btn').addEventListener('click', () => search('trace'));
  $('timeline-btn').addEventListener('click', () => search('timeline'));
  $('q').addEventListener('keydown', (e) => e.key === 'Enter' && search('trace'));
  document.addEventListener('keydown', (e) => e.key === 'Enter' && e.target.id === 'asof' && $('asof-btn') && showAsOf($('asof-btn').dataset.asofFlid));
  $('save').addEventListener('click', async () => {
    sessionStorage.setItem(TOKEN_KEY, $('token').value);
    $('token').value = '';
    $('status').textContent = 'loading';
    if (await refresh()) await refreshCharts();
  });

  if (token()) refresh().then((ok) => ok && refreshCharts());
  setInterval(() => token() && refresh(), 10_000);
  setInterval(() => token() && refreshCharts(), 30_000);
})();
