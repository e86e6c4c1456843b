// /ui/agents and /ui/agents/{name}: the agents, and a form that starts a run of one.

import { api, APIError } from './api.js';
import { h, set, seg, tags, badge, message, errorText, pretty, dl } from './dom.js';
import { schemaForm } from './form.js';

export async function agentsPage({ main, signal }) {
  document.title = 'Agents · Agent Orchestrator';
  const { agents } = await api('agents', { signal });
  agents.sort((a, b) => a.name.localeCompare(b.name));
  set(main,
    h('h1', null, 'Agents'),
    agents.length === 0
      ? message('info', 'No agents yet: start a runner with blueprints, or register AI agents (POST /agents).')
      : h('table', { class: 'list', id: 'agents' },
        h('thead', null, h('tr', null, ['Name', 'Type', 'Runner', 'Tags', 'Description'].map((t) => h('th', null, t)))),
        h('tbody', null, agents.map((a) => h('tr', { 'data-agent': a.name },
          h('td', null, h('a', { href: 'agents/' + seg(a.name) }, a.name), a.disabled ? h('span', { class: 'tag warn' }, 'disabled') : null),
          h('td', null, a.type),
          h('td', { class: 'mono' }, a.runner_id || h('span', { class: 'muted' }, 'registry')),
          h('td', null, tags(a.tags)),
          h('td', null, a.description || ''))))));
}

export async function agentPage({ main, params: [name], signal, navigate }) {
  document.title = name + ' · Agent Orchestrator';
  let agent;
  let schema;
  try {
    [agent, schema] = await Promise.all([api('agents/' + seg(name), { signal }), api('agents/' + seg(name) + '/schema', { signal })]);
  } catch (err) {
    if (err instanceof APIError && err.status === 404) {
      set(main, h('h1', null, name), message('error', 'There is no agent named "' + name + '". ', h('a', { href: 'agents' }, 'All agents')));
      return;
    }
    throw err;
  }
  document.title = agent.name + ' · Agent Orchestrator';
  // The schema route gives the implicit {prompt} schema of an AI agent that declares none.
  const paramsSchema = schema.parameters_schema === undefined ? null : schema.parameters_schema;
  const form = schemaForm(paramsSchema);
  const status = h('div', { 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Start run');
  const el = h('form', { class: 'card run-form', novalidate: true }, h('h2', null, 'Start a run'), form.element, status,
    h('div', { class: 'actions' }, submit));
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    set(status);
    form.clearErrors();
    const { params, errors } = form.collect();
    if (errors) return;
    submit.disabled = true;
    try {
      const body = { agent_name: agent.name };
      if (params !== undefined) body.parameters = params;
      const res = await api('runs', { method: 'POST', body, signal });
      navigate('sessions/' + seg(res.session_id));
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof APIError && err.body && Array.isArray(err.body.validation_errors)) {
        set(status, message('error', err.body.message || 'The parameters do not match the agent\'s schema.'));
        form.showErrors(err.body.validation_errors);
      } else {
        set(status, message('error', errorText(err)));
      }
    } finally {
      submit.disabled = false;
    }
  });
  const schemas = [];
  if (paramsSchema) schemas.push(h('details', null, h('summary', null, 'Parameters schema'), h('pre', { class: 'json' }, pretty(paramsSchema))));
  if (schema.output_schema) schemas.push(h('details', null, h('summary', null, 'Output schema'), h('pre', { class: 'json' }, pretty(schema.output_schema))));
  set(main,
    h('p', { class: 'crumbs' }, h('a', { href: 'agents' }, 'Agents'), ' / '),
    h('h1', null, agent.name, ' ', agent.disabled ? badge('disabled') : null),
    agent.description ? h('p', { class: 'lead' }, agent.description) : null,
    dl([
      ['Type', agent.type],
      ['Runner', agent.runner_id ? h('span', { class: 'mono' }, agent.runner_id) : 'registry (any runner that accepts AI agents)'],
      ['Tags', tags(agent.tags)],
      ['Sessions', h('a', { href: 'sessions?agent=' + seg(agent.name) }, 'this agent\'s sessions')],
      ['Allowed env', agent.allowed_env && agent.allowed_env.length ? agent.allowed_env.join(', ') : undefined],
    ]),
    el,
    schemas);
}
