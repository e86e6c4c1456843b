// DOM helpers. Everything the API returns is put into the page as text (text nodes, textContent,
// attribute values), never parsed as HTML: an agent's output cannot add markup or script to the page.

// h builds an element. attrs sets attributes (true: present, false/null/undefined: left out), except
// on* keys, which add event listeners. Children are nodes, or strings and numbers that become text;
// null, undefined and false are skipped, arrays flattened.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// set replaces el's children.
export function set(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// seg encodes one path segment of a link or an API call.
export const seg = encodeURIComponent;

export function link(href, ...children) {
  return h('a', { href }, ...children);
}

export function sessionLink(id) {
  return id ? h('a', { href: 'sessions/' + seg(id), class: 'mono' }, id) : '—';
}

export function agentLink(name) {
  return name ? h('a', { href: 'agents/' + seg(name) }, name) : '—';
}

const knownStatuses = new Set(['pending', 'claimed', 'running', 'completed', 'failed', 'stopped', 'online', 'stale', 'offline']);

export function badge(status) {
  const cls = knownStatuses.has(status) ? 'st-' + status : 'st-other';
  return h('span', { class: 'badge ' + cls }, status || 'unknown');
}

export function tags(list) {
  if (!list || !list.length) return h('span', { class: 'muted' }, '—');
  return h('span', { class: 'tags' }, list.map((t) => h('span', { class: 'tag' }, t)));
}

export function pretty(v) {
  return JSON.stringify(v, null, 2);
}

// One formatter for every date shown: Date.toLocaleString builds a new one on each call, which costs
// more than the rest of a table's rows together.
const dateFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' });
const clockFmt = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

export function clock(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : clockFmt.format(d);
}

export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return h('time', { datetime: iso, title: d.toISOString() }, dateFmt.format(d));
}

export function ago(iso, now = Date.now()) {
  if (!iso) return h('span', { class: 'muted' }, 'never');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return h('time', { datetime: iso, title: dateFmt.format(d) }, span(now - d.getTime()) + ' ago');
}

// span renders a duration in milliseconds for people: "850 ms", "4.2 s", "3 min 5 s", "2 h 4 min".
export function span(ms) {
  if (!Number.isFinite(ms)) return '—';
  ms = Math.max(0, ms);
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = ms / 1000;
  if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' min ' + Math.round(s - m * 60) + ' s';
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return hrs + ' h ' + (m - hrs * 60) + ' min';
  return Math.floor(hrs / 24) + ' d ' + (hrs % 24) + ' h';
}

// duration of a session: to its end, or to now while it runs.
export function sessionDuration(s, now = Date.now()) {
  const start = new Date(s.created_at).getTime();
  const end = s.ended_at ? new Date(s.ended_at).getTime() : now;
  return span(end - start);
}

// dl renders [term, value] pairs, skipping those whose value is undefined.
export function dl(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== undefined)
    .map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

export function message(kind, ...children) {
  return h('p', { class: 'notice ' + kind, role: kind === 'error' ? 'alert' : 'status' }, ...children);
}

// errorText says what an error from the API (or the network) was, for a person.
export function errorText(err) {
  if (err && err.status) {
    const code = err.body && err.body.error ? err.body.error + ': ' : '';
    return `${err.status} ${code}${err.message}`;
  }
  return String((err && err.message) || err);
}

// sleep waits ms, or less when signal aborts.
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal && signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      if (signal) signal.removeEventListener('abort', done);
      resolve();
    }
    if (signal) signal.addEventListener('abort', done, { once: true });
  });
}

// every calls fn every ms while the page is visible (at once when it becomes visible again), never two
// at once, until signal aborts.
export function every(ms, signal, fn) {
  let running = false;
  let timer = null;
  const tick = async () => {
    timer = null;
    if (signal.aborted || running) return;
    if (document.visibilityState !== 'hidden') {
      running = true;
      try {
        await fn();
      } catch (e) {
        // fn shows its own errors; a failed refresh is tried again at the next tick.
      } finally {
        running = false;
      }
    }
    if (!signal.aborted) timer = setTimeout(tick, ms);
  };
  const onVisible = () => {
    if (document.visibilityState === 'visible' && timer !== null) {
      clearTimeout(timer);
      tick();
    }
  };
  document.addEventListener('visibilitychange', onVisible);
  signal.addEventListener('abort', () => {
    if (timer !== null) clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisible);
  }, { once: true });
  timer = setTimeout(tick, ms);
}
