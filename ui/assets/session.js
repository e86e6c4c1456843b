// /ui/sessions/{id}: one session as it runs — status, parameters, events as they arrive (Server-Sent
// Events, resumed from the last one after a dropped connection), stderr as a log, the result, the parent
// and the children, and Stop, Resume and Re-run.

import { api, APIError, followEvents } from './api.js';
import { h, set, seg, badge, sessionLink, agentLink, time, clock, sessionDuration, message, errorText, pretty, dl, every } from './dom.js';
import { sessionsTable } from './sessions.js';

// At most this many events and log lines stay on the page; older ones are dropped from it (not from the
// store) so a chatty session cannot make the tab slow.
const maxEvents = 2000;
const maxLogLines = 5000;
const fallbackMs = 10000; // how often the session is read while its event stream is down

const ended = (st) => st === 'completed' || st === 'failed' || st === 'stopped';

// Event types after which the session itself has changed (status, run, result).
const lifecycle = new Set(['run_started', 'run_ended', 'result', 'executor_session', 'callback', 'output_truncated']);

export async function sessionPage({ main, params: [id], signal, navigate }) {
  document.title = id + ' · Agent Orchestrator';
  let sess;
  try {
    sess = await api('sessions/' + seg(id), { signal });
  } catch (err) {
    if (err instanceof APIError && err.status === 404) {
      set(main, h('h1', { class: 'mono' }, id), message('error', 'There is no session with this id (it may have been deleted). ', h('a', { href: 'sessions' }, 'All sessions')));
      return;
    }
    throw err;
  }

  const title = h('h1', null);
  const actions = h('div', { class: 'session-actions' });
  const actionNote = h('div', { 'aria-live': 'polite' });
  const facts = h('div', null);
  const result = h('section', { class: 'card', id: 'result' });
  const paramsBox = h('section', { class: 'card' });
  const children = h('section', { class: 'card', id: 'children' });
  const streamState = h('span', { class: 'muted small', id: 'stream-state' });
  const log = h('pre', { class: 'log', id: 'log', tabindex: '0' });
  const logNote = h('p', { class: 'muted small' });
  const events = h('ol', { class: 'events', id: 'events' });
  const eventsNote = h('p', { class: 'muted small' });
  let logLines = 0;
  let logDropped = 0;
  let eventsDropped = 0;
  let firstRunStarted = null;

  set(main,
    h('p', { class: 'crumbs' }, h('a', { href: 'sessions' }, 'Sessions'), ' / '),
    title, actions, actionNote, facts,
    h('div', { class: 'grid' }, result, paramsBox),
    h('section', { class: 'card' }, h('h2', null, 'stderr ', streamState), logNote, log),
    children,
    h('section', { class: 'card' }, h('h2', null, 'Events'), eventsNote, events));

  function renderSession() {
    document.title = sess.agent_name + ' ' + sess.session_id + ' · Agent Orchestrator';
    set(title, h('span', { class: 'mono' }, sess.session_id), ' ', badge(sess.status));
    title.setAttribute('data-status', sess.status);
    const r = sess.result;
    set(facts, dl([
      ['Agent', [agentLink(sess.agent_name), ' ', h('span', { class: 'muted' }, sess.agent_type)]],
      ['Status', h('span', { id: 'status' }, sess.status)],
      ['Re-run of', sess.rerun_of ? h('span', { id: 'rerun-of' }, sessionLink(sess.rerun_of)) : undefined],
      ['Parent', sess.parent_session_id ? [sessionLink(sess.parent_session_id), sess.callback ? ' (called back)' : ''] : undefined],
      ['Attempts', attempts(sess)],
      ['Run', sess.run_id ? h('span', { class: 'mono' }, sess.run_id) : undefined],
      ['Runner', sess.runner_id ? h('span', { class: 'mono' }, sess.runner_id) : undefined],
      ['Trace', sess.trace_id ? h('span', { class: 'mono', id: 'trace-id', title: 'W3C trace id: search for it in your tracing backend' }, sess.trace_id) : undefined],
      ['Project dir', sess.project_dir ? h('span', { class: 'mono' }, sess.project_dir) : undefined],
      ['Created', time(sess.created_at)],
      ['Started', firstRunStarted ? time(firstRunStarted) : undefined],
      ['Ended', sess.ended_at ? time(sess.ended_at) : undefined],
      ['Duration', sess.ended_at ? sessionDuration(sess) : h('span', { class: 'muted' }, 'running for ' + sessionDuration(sess))],
      ['Exit code', r && r.exit_code !== undefined && r.exit_code !== null ? h('span', { id: 'exit-code' }, String(r.exit_code)) : undefined],
      ['Error', sess.error ? h('span', { class: 'error-text' }, sess.error) : undefined],
    ]));
    renderResult();
    set(paramsBox, h('h2', null, 'Parameters'),
      sess.parameters !== undefined ? h('pre', { class: 'json', id: 'parameters' }, pretty(sess.parameters)) : h('p', { class: 'muted' }, 'none'),
      sess.metadata !== undefined ? [h('h3', null, 'Metadata'), h('pre', { class: 'json' }, pretty(sess.metadata))] : null);
    renderActions();
  }

  function renderResult() {
    const r = sess.result;
    if (!r) {
      set(result, h('h2', null, 'Result'), h('p', { class: 'muted' }, ended(sess.status) ? 'No result.' : 'Not yet: the session has not ended.'));
      return;
    }
    const out = r.result_data !== undefined && r.result_data !== null
      ? h('pre', { class: 'json', id: 'result-data' }, pretty(r.result_data))
      : h('pre', { class: 'text', id: 'result-text' }, r.result_text || '');
    set(result, h('h2', null, 'Result ', h('span', { class: 'muted small' }, r.result_type || '')),
      r.error ? message('error', r.error) : null,
      r.truncated ? message('info', 'The output was cut to fit a limit (see the output_truncated event).') : null,
      Array.isArray(r.validation_errors) && r.validation_errors.length
        ? h('ul', { class: 'form-errors' }, r.validation_errors.map((e) => h('li', null, `${e.path}: ${e.message}`))) : null,
      out,
      r.result_data !== undefined && r.result_text ? h('details', null, h('summary', null, 'result_text'), h('pre', { class: 'text' }, r.result_text)) : null);
  }

  // renderActions shows Stop or Resume; it rebuilds them only when that changes, so a refresh keeps a
  // prompt being typed (and the button being clicked).
  let actionsFor = '';
  function renderActions() {
    const mode = !ended(sess.status) ? 'stop' : sess.agent_type === 'agent' ? 'resume' : 'none';
    if (mode === actionsFor) return;
    if (actionsFor) set(actionNote); // "Stop requested." has been answered
    actionsFor = mode;
    const parts = [];
    if (mode === 'stop') {
      parts.push(h('button', { type: 'button', id: 'stop', class: 'danger', onclick: stop }, 'Stop'));
    } else if (mode === 'resume') {
      const prompt = h('textarea', { id: 'resume-prompt', rows: 3, placeholder: 'What should the agent do next?', 'aria-label': 'Prompt' });
      const form = h('form', { class: 'resume', novalidate: true }, prompt,
        h('button', { type: 'submit', id: 'resume', class: 'primary' }, 'Resume'));
      form.addEventListener('submit', (ev) => { ev.preventDefault(); resume(prompt); });
      parts.push(form);
    }
    if (mode !== 'stop') parts.push(rerunForm());
    set(actions, parts);
  }

  // rerunForm is the Re-run button, with the parameters to change before re-running: the original's,
  // editable, sent as a JSON merge patch (a key taken out becomes null, which removes it).
  function rerunForm() {
    const orig = sess.parameters && typeof sess.parameters === 'object' && !Array.isArray(sess.parameters) ? sess.parameters : {};
    const edit = h('textarea', { id: 'rerun-parameters', rows: 6, class: 'mono', 'aria-label': 'Parameters for the re-run' }, pretty(orig));
    const button = h('button', { type: 'submit', id: 'rerun' }, 'Re-run');
    const form = h('form', { class: 'rerun', novalidate: true }, button,
      h('details', null, h('summary', null, 'with changed parameters'), edit));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      let body;
      try {
        const changed = JSON.parse(edit.value || '{}');
        if (!changed || typeof changed !== 'object' || Array.isArray(changed)) throw new Error('the parameters must be a JSON object');
        const patch = { ...changed };
        for (const k of Object.keys(orig)) if (!(k in changed)) patch[k] = null;
        body = { parameters: patch };
      } catch (err) {
        set(actionNote, message('error', 'Re-run: ' + errorText(err)));
        edit.focus();
        return;
      }
      button.disabled = true;
      set(actionNote);
      try {
        const res = await api('sessions/' + seg(id) + '/rerun', { method: 'POST', body, signal });
        navigate('sessions/' + seg(res.session_id));
      } catch (err) {
        if (signal.aborted) return;
        button.disabled = false;
        set(actionNote, message('error', 'Re-run failed: ' + errorText(err)));
      }
    });
    return form;
  }

  async function stop(ev) {
    ev.target.disabled = true;
    set(actionNote);
    try {
      sess = await api('sessions/' + seg(id) + '/stop', { method: 'POST', signal });
      set(actionNote, message('info', 'Stop requested.'));
      renderSession();
    } catch (err) {
      if (signal.aborted) return;
      ev.target.disabled = false;
      set(actionNote, message('error', 'Stop failed: ' + errorText(err)));
    }
  }

  async function resume(prompt) {
    const text = prompt.value.trim();
    if (!text) {
      set(actionNote, message('error', 'Write a prompt for the agent to resume with.'));
      prompt.focus();
      return;
    }
    set(actionNote);
    try {
      await api('runs', { method: 'POST', body: { type: 'resume', session_id: sess.session_id, prompt: text }, signal });
      set(actionNote, message('info', 'Resumed.'));
      await refresh();
    } catch (err) {
      if (signal.aborted) return;
      set(actionNote, message('error', 'Resume failed: ' + errorText(err)));
    }
  }

  async function renderChildren() {
    const page = await api('sessions', { query: { parent_session_id: id, limit: 100 }, signal });
    if (!page.sessions.length) {
      set(children, h('h2', null, 'Children'), h('p', { class: 'muted' }, 'This session has started no other sessions.'));
      return;
    }
    set(children, h('h2', null, 'Children'), sessionsTable(page.sessions, { id: 'children-list', showParent: false }),
      page.next_cursor ? h('p', null, h('a', { href: 'sessions?parent=' + seg(id) }, 'All children')) : null);
  }

  // refresh reads the session again (its events said it changed), and follows its events again if a
  // resume has made it run after its stream closed.
  async function refresh() {
    try {
      sess = await api('sessions/' + seg(id), { signal });
      renderSession();
      if (!ended(sess.status)) follow();
      await renderChildren();
    } catch (err) {
      if (!signal.aborted) set(actionNote, message('error', errorText(err)));
    }
  }

  let refreshTimer = null;
  function refreshSoon() {
    if (refreshTimer === null) refreshTimer = setTimeout(() => { refreshTimer = null; refresh(); }, 150);
  }
  signal.addEventListener('abort', () => clearTimeout(refreshTimer));

  function addEvent(ev) {
    if (ev.event_type === 'run_started' && !firstRunStarted) firstRunStarted = ev.timestamp;
    if (ev.event_type === 'stderr') {
      const stick = log.scrollHeight - log.scrollTop - log.clientHeight < 8;
      log.append(document.createTextNode(String(ev.line ?? '') + (ev.truncated ? ' [cut]' : '') + '\n'));
      if (++logLines > maxLogLines) {
        log.firstChild.remove();
        logLines--;
        logDropped++;
        logNote.textContent = logDropped + ' earlier lines are not shown.';
      }
      if (stick) log.scrollTop = log.scrollHeight;
    }
    const row = h('li', { 'data-type': ev.event_type, 'data-seq': ev.seq },
      h('span', { class: 'seq' }, '#' + ev.seq),
      h('span', { class: 'etype' }, ev.event_type),
      h('time', { datetime: ev.timestamp, title: ev.timestamp }, clock(ev.timestamp)),
      h('span', { class: 'summary' }, summary(ev)));
    const full = h('pre', { class: 'json', hidden: true });
    row.addEventListener('click', () => {
      if (!full.textContent) full.textContent = pretty(ev);
      full.hidden = !full.hidden;
    });
    row.append(full);
    events.append(row);
    if (events.childElementCount > maxEvents) {
      events.firstElementChild.remove();
      eventsDropped++;
      eventsNote.textContent = eventsDropped + ' earlier events are not shown.';
    }
  }

  // follow reads the events from after the last one shown. The server may end an ended session's stream;
  // a resume (seen by refresh) follows again.
  const states = { live: 'live', reconnecting: 'reconnecting…', closed: '', failed: 'not following' };
  let following = false;
  let streamLive = false;
  let lastSeq = 0;
  async function follow() {
    if (following) return;
    following = true;
    try {
      await followEvents(id, {
        signal,
        after: lastSeq,
        onEvent(ev) {
          if (typeof ev.seq === 'number') lastSeq = ev.seq;
          addEvent(ev);
          if (lifecycle.has(ev.event_type)) refreshSoon();
        },
        onState(state, err) {
          streamLive = state === 'live';
          streamState.textContent = states[state] || '';
          streamState.setAttribute('data-state', state);
          if (err) set(actionNote, message('error', 'Events: ' + errorText(err)));
        },
        stopWhenClosed: () => ended(sess.status),
      });
    } finally {
      following = false;
    }
  }

  renderSession();
  renderChildren().catch((err) => { if (!signal.aborted) set(children, h('h2', null, 'Children'), message('error', errorText(err))); });
  follow();
  // Every change of the session comes with an event (run_started, run_ended, result, …), after which it is
  // read again: the page holds one connection, the stream. While the stream is down — reconnecting, or
  // closed by the server after an ended session's last event — a read every few seconds stands in for
  // it, so that a resume from elsewhere is still seen.
  every(fallbackMs, signal, async () => {
    if (!streamLive) await refresh();
  });
}

// summary is one line saying what an event holds.
function summary(ev) {
  const d = { ...ev };
  delete d.event_type;
  delete d.session_id;
  delete d.seq;
  delete d.timestamp;
  switch (ev.event_type) {
    case 'stderr':
      return String(d.line ?? '');
    case 'progress':
      return String(d.message ?? '');
    case 'message': {
      const c = d.content;
      const text = typeof c === 'string' ? c : Array.isArray(c)
        ? c.map((b) => (b && b.type === 'text' ? b.text : b && b.type ? '[' + b.type + (b.name ? ' ' + b.name : '') + ']' : '')).join(' ')
        : '';
      return (d.role ? d.role + ': ' : '') + clip(text || JSON.stringify(d));
    }
    case 'run_started':
    case 'run_ended':
      return [d.run_id, d.status, d.error].filter(Boolean).join(' · ');
    default:
      return clip(JSON.stringify(d));
  }
}

function clip(s) {
  s = String(s);
  return s.length > 300 ? s.slice(0, 300) + '…' : s;
}

// attempts shows where a session with retries stands: its attempt of how many its policy allows, and
// when the next one is due while a retry waits. Nothing for a session that may make one attempt.
function attempts(sess) {
  const attempt = sess.attempt || 1, max = Math.max(sess.max_attempts || 1, attempt);
  if (max <= 1) return undefined;
  const parts = [h('span', { id: 'attempts' }, attempt + ' of ' + max)];
  if (sess.status === 'pending' && sess.next_attempt_at) {
    parts.push(', next at ', h('span', { id: 'next-attempt' }, time(sess.next_attempt_at)));
  }
  return parts;
}
