// /ui/runners: each runner with its status, heartbeat, slots, agents and what demands match on. Listing
// runners is for admins; another token is told so.

import { api, APIError } from './api.js';
import { h, set, seg, badge, tags, ago, message, errorText, every, dl } from './dom.js';

const refreshMs = 5000;

export async function runnersPage({ main, signal }) {
  document.title = 'Runners · Agent Orchestrator';
  const body = h('div', { id: 'runners-body' });
  const note = h('div', { 'aria-live': 'polite' });
  set(main, h('h1', null, 'Runners'), note, body);
  let stopped = false; // no more refreshes: the API refused the list
  let armed = 0; // Remove buttons waiting for their confirming click: no refresh replaces them meanwhile
  let shown = '';
  let shownAt = 0;
  const refresh = async () => {
    if (stopped || armed > 0) return;
    let runners;
    let agents;
    let busy;
    try {
      [{ runners }, { agents }, busy] = await Promise.all([
        api('runners', { signal }),
        api('agents', { signal }),
        heldRuns(signal),
      ]);
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof APIError && err.status === 403) {
        set(body, message('info', h('strong', null, 'Listing runners needs an admin token. '),
          'The token this tab uses has another role, so the API does not show runners to it (GET /runners is admin-only). Sign out and enter an admin token to see them.'));
        body.setAttribute('data-needs-admin', '');
        stopped = true;
        return;
      }
      set(note, message('error', 'Not updating: ' + errorText(err)));
      return;
    }
    set(note);
    const key = JSON.stringify([runners, agents, busy]);
    if (key === shown && Date.now() - shownAt < 15000) return;
    shown = key;
    shownAt = Date.now();
    const held = new Map();
    for (const r of busy) if (r.runner_id) held.set(r.runner_id, (held.get(r.runner_id) || 0) + 1);
    const owned = new Map();
    for (const a of agents) {
      if (!a.runner_id) continue;
      if (!owned.has(a.runner_id)) owned.set(a.runner_id, []);
      owned.get(a.runner_id).push(a.name);
    }
    if (!runners.length) {
      set(body, message('info', 'No runner has registered.'));
      return;
    }
    const now = Date.now();
    runners.sort((a, b) => (a.hostname + a.runner_id).localeCompare(b.hostname + b.runner_id));
    set(body, runners.map((r) => runnerCard(r, held.get(r.runner_id) || 0, owned.get(r.runner_id) || [], now)));
  };

  function runnerCard(r, running, names, now) {
    const max = r.max_concurrent || 0;
    const removeBtn = h('button', { type: 'button', class: 'danger small', 'data-admin': '' }, 'Remove');
    let sure = false;
    removeBtn.addEventListener('click', async () => {
      if (!sure) {
        sure = true;
        armed++;
        removeBtn.textContent = 'Remove: sure?';
        setTimeout(() => {
          if (!sure) return;
          sure = false;
          armed--;
          removeBtn.textContent = 'Remove';
        }, 4000);
        return;
      }
      sure = false;
      armed--;
      removeBtn.disabled = true;
      try {
        await api('runners/' + seg(r.runner_id), { method: 'DELETE', signal });
        shown = '';
        await refresh();
      } catch (err) {
        if (!signal.aborted) set(note, message('error', 'Remove failed: ' + errorText(err)));
        removeBtn.disabled = false;
      }
    });
    return h('section', { class: 'card runner', 'data-runner': r.runner_id },
      h('h2', null, r.hostname || r.runner_id, ' ', badge(r.status), ' ',
        h('span', { class: 'mono muted small' }, r.runner_id), ' ', removeBtn),
      dl([
        ['Last heartbeat', ago(r.last_heartbeat_at, now)],
        ['Slots', h('span', { class: 'slots' }, `${running} running, ${max > 0 ? Math.max(0, max - running) : '?'} free of ${max || '?'}`)],
        ['Agents', names.length ? h('span', { class: 'tags' }, names.sort().map((n) => h('a', { class: 'tag', href: 'agents/' + seg(n) }, n))) : h('span', { class: 'muted' }, 'none of its own')],
        ['Runs AI agents', r.accepts_agents ? 'yes' : 'no'],
        ['Hostname', h('span', { class: 'mono' }, r.hostname || '—')],
        ['Project dir', r.project_dir ? h('span', { class: 'mono' }, r.project_dir) : undefined],
        ['Executor', [r.executor_type || '—', r.executor_profile ? ' / profile ' + r.executor_profile : '']],
        ['Tags', [tags(r.tags), r.require_matching_tags ? h('span', { class: 'muted small' }, ' (takes only runs that demand one)') : '']],
        ['Registered', ago(r.registered_at, now)],
      ]));
  }

  await refresh();
  every(refreshMs, signal, refresh);
}

// heldRuns lists the runs that hold a runner's slot (claimed or running), page by page.
async function heldRuns(signal) {
  const out = [];
  let after = '';
  for (let i = 0; i < 50; i++) {
    const page = await api('runs', { signal, query: { status: 'claimed,running', limit: 1000, after } });
    out.push(...page.runs);
    if (!page.next_cursor) break;
    after = page.next_cursor;
  }
  return out;
}
