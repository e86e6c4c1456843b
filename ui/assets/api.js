// The coordinator's JSON API, as the pages use it: same origin, bearer token from sessionStorage.

import { sleep } from './dom.js';

// The document's <base> is the dashboard's root (…/ui/); the API's routes sit beside it (…/).
export const uiRoot = new URL('./', document.baseURI);
export const apiRoot = new URL('../', uiRoot);

const tokenKey = 'orchestrator.token';

export function getToken() {
  try {
    return sessionStorage.getItem(tokenKey) || '';
  } catch {
    return '';
  }
}

export function setToken(token) {
  if (token) sessionStorage.setItem(tokenKey, token);
  else sessionStorage.removeItem(tokenKey);
}

// APIError is an answer other than 2xx: status, the JSON error body ({error, message, …}) when there
// was one, and its message.
export class APIError extends Error {
  constructor(status, body, message) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

// The app listens for this to ask for a token.
export const unauthorizedEvent = 'orchestrator:unauthorized';

function headers(extra) {
  const out = { Accept: 'application/json', ...extra };
  const token = getToken();
  if (token) out.Authorization = 'Bearer ' + token;
  return out;
}

export function apiURL(path, query) {
  const u = new URL(path, apiRoot);
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
  }
  return u;
}

async function failure(res) {
  let body = null;
  try {
    body = JSON.parse(await res.text());
  } catch {
    // not JSON: a proxy's page, say
  }
  const msg = (body && body.message) || `${res.status} ${res.statusText}`;
  const err = new APIError(res.status, body, msg);
  if (res.status === 401) window.dispatchEvent(new CustomEvent(unauthorizedEvent, { detail: err }));
  return err;
}

// api calls one route: path relative to the API root ("sessions", "agents/" + seg(name)), query
// parameters, a JSON body. It returns the decoded answer (null for 204) or throws an APIError.
export async function api(path, { method = 'GET', query, body, signal } = {}) {
  const init = { method, signal, cache: 'no-store', headers: headers() };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(apiURL(path, query), init);
  if (!res.ok) throw await failure(res);
  if (res.status === 204) return null;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

// followEvents reads a session's events as Server-Sent Events, through fetch so that it can send the
// bearer token (EventSource cannot). It calls onEvent with each event in order, from after the sequence
// number after, and onState with "live", "reconnecting", "closed" or "failed" (with the error). A dropped
// connection is resumed from the last event seen (Last-Event-ID). When the server ends the stream,
// followEvents returns if stopWhenClosed() says so (the session has ended), else it reconnects. It
// returns when signal aborts, or on an error retrying cannot mend (401, 403, 404, the session deleted).
export async function followEvents(id, { after = 0, signal, onEvent, onState, stopWhenClosed }) {
  let last = after;
  for (let delay = 500; !signal.aborted; delay = Math.min(delay * 2, 10000)) {
    try {
      const hdrs = headers({ Accept: 'text/event-stream' });
      if (last > 0) hdrs['Last-Event-ID'] = String(last);
      const res = await fetch(apiURL('sessions/' + encodeURIComponent(id) + '/events/stream'),
        { headers: hdrs, signal, cache: 'no-store' });
      if (!res.ok) throw await failure(res);
      onState('live');
      delay = 500;
      let fatal = null;
      await readSSE(res.body, (msg) => {
        if (msg.event === 'error') {
          let body = null;
          try {
            body = JSON.parse(msg.data);
          } catch {
            // keep null
          }
          fatal = new APIError(404, body, (body && body.message) || 'the event stream failed');
          return;
        }
        // The "end" frame says the stream closes after the session's last event: it is no event itself
        // (drawn as one, it showed as "#undefined undefined {…}").
        if (msg.event === 'end') return;
        const ev = JSON.parse(msg.data);
        if (typeof ev.seq === 'number' && ev.seq <= last) return; // already seen
        if (typeof ev.seq === 'number') last = ev.seq;
        onEvent(ev);
      });
      if (fatal) {
        onState('failed', fatal);
        return;
      }
      if (stopWhenClosed && stopWhenClosed()) {
        onState('closed');
        return;
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof APIError && err.status !== 429 && err.status < 500) {
        onState('failed', err);
        return;
      }
    }
    onState('reconnecting');
    await sleep(delay, signal);
  }
}

// readSSE parses a text/event-stream body, calling onMessage({event, data, id}) for each message.
async function readSSE(body, onMessage) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let data = [];
  let event = '';
  let id = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      let line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (data.length) onMessage({ event: event || 'message', data: data.join('\n'), id });
        data = [];
        event = '';
        continue;
      }
      if (line.startsWith(':')) continue; // a comment: the heartbeat
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? '' : line.slice(colon + 1);
      if (val.startsWith(' ')) val = val.slice(1);
      if (field === 'data') data.push(val);
      else if (field === 'event') event = val;
      else if (field === 'id') id = val;
    }
  }
}
