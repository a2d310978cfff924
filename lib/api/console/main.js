// The ops console's entry module (served at /ops/js/main.js; the page has no inline script). Plain
// browser JavaScript modules, no framework, no CDN, no bundler: signs in (session.js), shows who
// and the role, offers only the actions of that role, and wires the views (event delegation; no
// inline handlers).
import { loadCharts, refreshCharts } from './charts.js';
import { $, say } from './format.js';
import { list, loadCounts, openList, wireList } from './list.js';
import { completeSignIn, config, loadConfig, loadMe, may, me, signedIn, signIn, signOut, useToken } from './session.js';
import { loadSummary, resumeBackfill, sendAgain } from './summary.js';
import { showAsOf, showTimeline } from './timeline.js';
import { showTrace } from './trace.js';

async function refresh() {
  try {
    await loadCounts();
    await loadSummary();
  } catch (e) {
    $('status').innerHTML = '<span class="bad"></span>';
    $('status').firstChild.textContent = `cannot load: ${e.message}`;
    return false;
  }
  return true;
}

/** The sign-in bar: the provider's button and/or the development token, or who is signed in. */
function showSignIn() {
  const c = config();
  const m = me();
  $('oidc-signin').hidden = signedIn() || !c.oidc;
  $('token-signin').hidden = signedIn() || !c.tokenSignIn;
  $('signout').hidden = !signedIn();
  $('who').hidden = !m;
  $('who').textContent = m ? `Signed in as ${m.name || m.subject} (${m.role || 'no role'})` : '';
  document.body.dataset.role = m?.role || '';
  $('replay-selected').hidden = !may('POST /ops/replay');
}

/** Signed in: who, then the data; a refused token says why. */
async function start() {
  try {
    await loadMe();
  } catch (e) {
    $('status').innerHTML = '<span class="bad"></span>';
    $('status').firstChild.textContent = `cannot load: ${e.message}`;
    return;
  }
  showSignIn();
  $('status').textContent = 'loading';
  if (await refresh()) await refreshCharts();
}

document.addEventListener('click', async (ev) => {
  const el = ev.target.closest('a,button');
  if (!el) return;
  if (el.dataset.trace) return showTrace(el.dataset.trace);
  if (el.dataset.flid) return showTimeline(el.dataset.flid);
  if (el.dataset.asofFlid) return showAsOf(el.dataset.asofFlid);
  if (el.dataset.state) return openList(el.dataset.state, el.dataset.reason, undefined, 1).catch((e) => say(`Cannot list: ${e.message}`, true));
  if (el.dataset.resume || el.dataset.send) {
    el.disabled = true;
    await (el.dataset.resume ? resumeBackfill(el.dataset.resume) : sendAgain(el.dataset.send));
    return refresh();
  }
});
wireList(refresh);
const search = (which) => {
  const q = $('q').value.trim();
  if (!/^\d{1,30}$/.test(q)) return say('Type a message id or a FLID (digits only) first.', true);
  return which === 'trace' ? showTrace(q) : showTimeline(q);
};
$('trace-btn').addEventListener('click', () => search('trace'));
$('timeline-btn').addEventListener('click', () => search('timeline'));
$('q').addEventListener('keydown', (e) => e.key === 'Enter' && search('trace'));
document.addEventListener('keydown', (e) => e.key === 'Enter' && e.target.id === 'asof' && $('asof-btn') && showAsOf($('asof-btn').dataset.asofFlid));
$('oidc-signin').addEventListener('click', () => signIn().catch((e) => say(`Cannot sign in: ${e.message}`, true)));
$('save').addEventListener('click', () => {
  useToken($('token').value);
  $('token').value = '';
  return start();
});
$('signout').addEventListener('click', () => {
  signOut();
  Object.assign(list, { state: null, rows: [] });
  for (const id of ['detail', 'counts', 'head', 'abandoned', 'dead', 'requests', 'recent-requests', 'list']) $(id).innerHTML = '';
  $('list-panel').className = 'hidden';
  $('status').textContent = 'signed out';
  showSignIn();
});

try {
  await loadConfig();
  showSignIn();
  if (await completeSignIn()) await start();
} catch (e) {
  $('status').innerHTML = '<span class="bad"></span>';
  $('status').firstChild.textContent = `cannot sign in: ${e.message}`;
  showSignIn();
}
setInterval(() => signedIn() && refresh(), 10_000);
setInterval(() => signedIn() && loadCharts().catch(() => {}), 30_000);
