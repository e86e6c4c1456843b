// The dashboard's shell: routing between pages by address, and the token.

import { api, APIError, getToken, setToken, uiRoot, unauthorizedEvent } from './api.js';
import { h, set, message, errorText } from './dom.js';
// Each page's module is loaded when its address is first shown: a first visit fetches only what its
// page needs.
const agents = () => import('./agents.js');
const sessions = () => import('./sessions.js');
const session = () => import('./session.js');
const runners = () => import('./runners.js');
const schedules = () => import('./schedules.js');

const routes = [
  [/^$/, () => sessions().then((m) => m.sessionsPage), 'sessions'],
  [/^sessions$/, () => sessions().then((m) => m.sessionsPage), 'sessions'],
  [/^sessions\/([^/]+)$/, () => session().then((m) => m.sessionPage), 'sessions'],
  [/^agents$/, () => agents().then((m) => m.agentsPage), 'agents'],
  [/^agents\/([^/]+)$/, () => agents().then((m) => m.agentPage), 'agents'],
  [/^runners$/, () => runners().then((m) => m.runnersPage), 'runners'],
  [/^schedules$/, () => schedules().then((m) => m.schedulesPage), 'schedules'],
];

const main = document.getElementById('main');
const authBox = document.getElementById('auth');

// who is what the API told us about the caller: admin when GET /runners answers (also on an open API),
// "client" when it is forbidden. It only decides what to show; the API enforces the roles.
const who = { admin: false, known: false };

let current = null; // the page's AbortController
let prompting = false; // the token prompt is showing

function relPath() {
  const p = location.pathname;
  return p.startsWith(uiRoot.pathname) ? p.slice(uiRoot.pathname.length) : p.replace(/^\//, '');
}

// navigate shows the page at href (relative to the dashboard's root, or absolute within it).
export function navigate(href, { replace = false } = {}) {
  const u = new URL(href, uiRoot);
  if (replace) history.replaceState(null, '', u);
  else history.pushState(null, '', u);
  render();
}

// probeRole learns whether the token (or an open API) is an admin's. It resolves to false after a 401:
// the token prompt is showing then.
async function probeRole(signal) {
  try {
    await api('runners', { signal });
    who.admin = true;
  } catch (err) {
    if (!(err instanceof APIError) || (err.status !== 403 && err.status !== 401)) throw err;
    who.admin = false;
    if (err.status === 401) return false;
  }
  who.known = true;
  showAuth();
  return true;
}

function showAuth() {
  const token = getToken();
  if (!token) {
    set(authBox, who.known ? h('span', { class: 'muted', title: 'The API has no tokens configured' }, 'open API') : '');
    return;
  }
  const role = !who.known ? 'unknown' : who.admin ? 'admin' : 'client';
  const label = { unknown: 'signed in', admin: 'admin token', client: 'token without admin role' }[role];
  set(authBox,
    h('span', { class: 'role', 'data-role': role }, label),
    ' ',
    h('button', { type: 'button', class: 'link', onclick: () => { setToken(''); who.known = false; render(); } }, 'Sign out'));
}

function markNav(section) {
  for (const a of document.querySelectorAll('nav a[data-nav]')) {
    if (a.dataset.nav === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

async function render() {
  if (current) current.abort();
  const ctl = new AbortController();
  current = ctl;
  prompting = false;
  const signal = ctl.signal;
  set(main, h('p', { class: 'muted' }, 'Loading…'));
  // The role only labels the header (a page learns what it may do from its own calls' answers), so it
  // is asked for once the page is on screen, off the page's critical path.
  const probe = () => { if (!who.known && !signal.aborted) probeRole(signal).catch(() => {}); };
  try {
    showAuth();
    const rel = relPath();
    for (const [re, load, section] of routes) {
      const m = rel.match(re);
      if (!m) continue;
      markNav(section);
      const page = await load();
      if (signal.aborted) return;
      const params = m.slice(1).map(decodeURIComponent);
      await page({ main, params, query: new URLSearchParams(location.search), signal, navigate });
      probe();
      return;
    }
    markNav('');
    document.title = 'Not found · Agent Orchestrator';
    set(main, h('h1', null, 'Not found'), message('error', 'The dashboard has no page at this address. ', h('a', { href: 'sessions' }, 'Sessions')));
    probe();
  } catch (err) {
    if (signal.aborted) return;
    if (err instanceof APIError && err.status === 401) return; // the token prompt is showing
    set(main, h('h1', null, 'Something went wrong'), message('error', errorText(err)));
    probe();
  }
}

function tokenPrompt(err) {
  // Several calls of one page may be refused at once: the first one asks.
  if (prompting) return;
  prompting = true;
  if (current) current.abort();
  current = null;
  const had = getToken();
  setToken('');
  who.known = false;
  showAuth();
  markNav('');
  document.title = 'Sign in · Agent Orchestrator';
  const input = h('input', { type: 'password', name: 'token', id: 'token', autocomplete: 'off', required: true, spellcheck: 'false' });
  const note = h('div', { 'aria-live': 'polite' });
  if (had) note.append(message('error', 'The token was not accepted (' + errorText(err) + '). Enter another.'));
  const form = h('form', { class: 'card token-form', novalidate: true },
    h('h1', null, 'Sign in'),
    h('p', null, 'This coordinator needs a bearer token. The dashboard keeps it in this tab only (sessionStorage) and sends it with each API call; it can do what the token\'s role allows.'),
    note,
    h('label', { for: 'token' }, 'Token'),
    input,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Use token')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    if (!t) {
      set(note, message('error', 'Enter a token.'));
      return;
    }
    setToken(t);
    render();
  });
  set(main, form);
  input.focus();
}

window.addEventListener(unauthorizedEvent, (ev) => tokenPrompt(ev.detail));
window.addEventListener('popstate', render);
document.addEventListener('click', (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download')) return;
  const u = new URL(a.href);
  if (u.origin !== location.origin || !u.pathname.startsWith(uiRoot.pathname)) return;
  ev.preventDefault();
  if (u.href !== location.href) navigate(u.href);
});

render();
