// /ui/sessions: the newest sessions first, filtered by status, agent or parent, paged, and kept up to date
// by polling the first page's worth every few seconds while the tab is visible (one small indexed query).

import { api } from './api.js';
import { h, set, badge, sessionLink, agentLink, ago, sessionDuration, message, errorText, every } from './dom.js';

const pageSize = 50;
const refreshMs = 2000;
const statuses = ['pending', 'running', 'completed', 'failed', 'stopped'];

// sessionsTable renders sessions as rows (shared with a session's children).
export function sessionsTable(sessions, { id, showParent = true } = {}) {
  const now = Date.now();
  const head = ['Session', 'Agent', 'Status', 'Created', 'Duration'];
  if (showParent) head.push('Parent');
  return h('table', { class: 'list', id },
    h('thead', null, h('tr', null, head.map((t) => h('th', null, t)))),
    h('tbody', null, sessions.map((s) => h('tr', { 'data-session': s.session_id },
      h('td', null, sessionLink(s.session_id)),
      h('td', null, agentLink(s.agent_name), ' ', h('span', { class: 'muted small' }, s.agent_type)),
      h('td', null, badge(s.status)),
      h('td', null, ago(s.created_at, now)),
      h('td', null, sessionDuration(s, now)),
      showParent ? h('td', null, s.parent_session_id ? sessionLink(s.parent_session_id) : h('span', { class: 'muted' }, '—')) : null))));
}

export async function sessionsPage({ main, query, signal, navigate }) {
  document.title = 'Sessions · Agent Orchestrator';
  const status = query.get('status') || '';
  const agent = query.get('agent') || '';
  const parent = query.get('parent') || '';
  const cursor = query.get('cursor') || '';

  // go changes the filters (or the page) through the address, so a reload or a link shows the same list.
  const go = (changes) => {
    const q = new URLSearchParams({ status, agent, parent, cursor, ...changes });
    for (const [k, v] of [...q]) if (!v) q.delete(k);
    const s = q.toString();
    navigate('sessions' + (s ? '?' + s : ''));
  };

  const statusSel = h('select', { id: 'filter-status', 'aria-label': 'Status' },
    h('option', { value: '' }, 'any status'),
    h('option', { value: 'pending,running', selected: status === 'pending,running' }, 'active'),
    statuses.map((st) => h('option', { value: st, selected: status === st }, st)));
  statusSel.addEventListener('change', () => go({ status: statusSel.value, cursor: '' }));
  const agentInput = h('input', { id: 'filter-agent', type: 'search', list: 'agent-names', placeholder: 'any agent', 'aria-label': 'Agent', value: agent || null, autocomplete: 'off' });
  const agentList = h('datalist', { id: 'agent-names' });
  agentInput.addEventListener('change', () => go({ agent: agentInput.value.trim(), cursor: '' }));
  const live = h('span', { class: 'live muted', 'aria-live': 'polite' });
  const filters = h('div', { class: 'filters' },
    h('label', { for: 'filter-status' }, 'Status '), statusSel, ' ',
    h('label', { for: 'filter-agent' }, 'Agent '), agentInput, agentList, ' ',
    parent ? h('span', { class: 'tag' }, 'children of ', sessionLink(parent), ' ',
      h('button', { type: 'button', class: 'link', onclick: () => go({ parent: '', cursor: '' }) }, '✕ clear')) : null,
    live);
  const body = h('div', { id: 'sessions-body' });
  const pager = h('div', { class: 'pager' });
  set(main, h('h1', null, 'Sessions'), filters, body, pager);

  // The agent names for the filter's suggestions, fetched when the filter is first used (off the page's
  // first load); a failure leaves the filter as free text.
  agentInput.addEventListener('focus', () => {
    api('agents', { signal }).then(({ agents }) => {
      set(agentList, agents.map((a) => a.name).sort().map((n) => h('option', { value: n })));
    }, () => {});
  }, { once: true });

  let shown = ''; // the page on screen, as JSON
  let shownAt = 0;
  const refresh = async () => {
    let page;
    try {
      page = await api('sessions', {
        signal,
        query: { order: 'newest', limit: pageSize, status, agent_name: agent, parent_session_id: parent, cursor },
      });
    } catch (err) {
      if (signal.aborted) return;
      set(live, message('error', 'Not updating: ' + errorText(err)));
      if (!shown) throw err;
      return;
    }
    if (signal.aborted) return;
    set(live, 'live');
    // Rebuilt only when something changed (or the relative times have aged), so that a click on a row
    // or a button does not land on a node just replaced.
    const key = JSON.stringify(page);
    if (key === shown && Date.now() - shownAt < 15000) return;
    shown = key;
    shownAt = Date.now();
    if (!page.sessions.length) {
      set(body, message('info', cursor ? 'No older sessions.' : (status || agent || parent) ? 'No sessions match these filters.' : 'No sessions yet: start one from an agent\'s page.'));
    } else {
      set(body, sessionsTable(page.sessions, { id: 'sessions' }));
    }
    set(pager,
      cursor ? h('button', { type: 'button', onclick: () => go({ cursor: '' }) }, '« Newest') : null,
      page.next_cursor ? h('button', { type: 'button', id: 'older', onclick: () => go({ cursor: page.next_cursor }) }, 'Older »') : null);
  };
  await refresh();
  // Every refresh shows the same page (the newest, or the one the cursor names) as it is now.
  every(refreshMs, signal, refresh);
}
