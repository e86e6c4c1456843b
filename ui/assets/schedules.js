// /ui/schedules: the schedules (recurring runs), each with its cron expression, next tick, latest session
// and why its latest tick could not start a run, if it could not; a client or admin pauses and resumes
// them here. Creating one is for the API and ao (it needs the agent's parameters).

import { api } from './api.js';
import { h, set, seg, badge, sessionLink, agentLink, ago, time, message, errorText, every } from './dom.js';

const refreshMs = 5000;

export async function schedulesPage({ main, signal }) {
  document.title = 'Schedules · Agent Orchestrator';
  const body = h('div', { id: 'schedules-body' });
  const note = h('div', { 'aria-live': 'polite' });
  set(main, h('h1', null, 'Schedules'), note, body);
  let shown = '';
  let shownAt = 0;
  const refresh = async () => {
    let schedules;
    try {
      ({ schedules } = await api('schedules', { signal, query: { limit: 1000 } }));
    } catch (err) {
      if (signal.aborted) return;
      set(note, message('error', 'Not updating: ' + errorText(err)));
      if (!shown) throw err;
      return;
    }
    set(note);
    const key = JSON.stringify(schedules);
    if (key === shown && Date.now() - shownAt < 15000) return;
    shown = key;
    shownAt = Date.now();
    if (!schedules.length) {
      set(body, message('info', 'No schedules. Add one with POST /schedules or ao schedule add AGENT --cron EXPR.'));
      return;
    }
    set(body, schedulesTable(schedules));
  };

  function schedulesTable(schedules) {
    const now = Date.now();
    return h('table', { class: 'list', id: 'schedules' },
      h('thead', null, h('tr', null, ['Schedule', 'Agent', 'Cron', 'State', 'Next tick', 'Last fired', 'Last session', ''].map((t) => h('th', null, t)))),
      h('tbody', null, schedules.map((s) => h('tr', { 'data-schedule': s.id },
        h('td', { class: 'mono small' }, s.id),
        h('td', null, agentLink(s.agent_name)),
        h('td', null, h('code', null, s.cron), ' ', h('span', { class: 'muted small' }, s.timezone)),
        h('td', null, badge(s.paused ? 'paused' : 'active'), ' ', h('span', { class: 'muted small' }, 'overlap ' + s.overlap),
          s.queued ? h('span', { class: 'muted small' }, ', one tick queued') : null),
        h('td', null, s.paused ? h('span', { class: 'muted' }, '—') : time(s.next_fire_at)),
        h('td', null, ago(s.last_fired_at, now)),
        h('td', null, s.last_session_id ? sessionLink(s.last_session_id) : h('span', { class: 'muted' }, '—'),
          s.last_error ? h('div', { class: 'small error-text' }, s.last_error) : null),
        h('td', null, toggleButton(s))))));
  }

  function toggleButton(s) {
    const btn = h('button', { type: 'button', class: 'small', 'data-toggle': s.id }, s.paused ? 'Resume' : 'Pause');
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        await api('schedules/' + seg(s.id), { method: 'PATCH', body: { paused: !s.paused }, signal });
        shown = '';
        await refresh();
      } catch (err) {
        if (!signal.aborted) set(note, message('error', (s.paused ? 'Resume' : 'Pause') + ' failed: ' + errorText(err)));
        btn.disabled = false;
      }
    });
    return btn;
  }

  await refresh();
  every(refreshMs, signal, refresh);
}
