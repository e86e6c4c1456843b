// The official MCP TypeScript SDK as a client of the orchestrator's MCP server, run by
// TestTypeScriptClient (mcpserver/tsclient_test.go), which starts the server and checks what this script
// prints: one JSON object on stdout. A check that fails here is reported in "failures"; an unexpected
// exception exits with status 1.
//
// Environment: MCP_URL (the server's endpoint), SLOW_KEY (the gate of the "slow" agent to cancel),
// REQUEST_ID (an open approval request), ASK_SESSION (a running session whose agent asks a question).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const out = { failures: [], tools: {}, calls: {} };
const fail = (msg) => out.failures.push(msg);

const client = new Client({ name: 'tsclient-test', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL));
await client.connect(transport);
out.protocol_version = transport.protocolVersion;
out.mcp_session_id = transport.sessionId ?? '';
out.capabilities = client.getServerCapabilities();

// Every tool, with its output schema. listTools also primes the SDK's output validators.
const { tools } = await client.listTools();
for (const t of tools) {
  out.tools[t.name] = { output_schema_type: t.outputSchema?.type ?? null };
}

// The SDK validates structured content against the output schema in callTool (and throws on a mismatch):
// make sure this version does, so that the calls below prove something.
const validator = client.getToolOutputValidator?.('get_agent_schema');
out.sdk_validates_output = typeof validator === 'function' && validator({ bogus: true }).valid === false;

// call calls a tool and records its answer; a mismatch with the output schema throws inside callTool.
async function call(name, args, label = name) {
  try {
    const res = await client.callTool({ name, arguments: args });
    out.calls[label] = {
      is_error: res.isError === true,
      structured: res.structuredContent ?? null,
      texts: (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text),
    };
    return res;
  } catch (e) {
    fail(`${label}: callTool threw: ${e.message}`);
    return null;
  }
}

// Each tool at least once.
await call('list_agent_blueprints', {});
await call('get_agent_schema', { agent_name: 'add' });
const added = await call('start_agent_session', { agent_name: 'add', parameters: { a: 2, b: 3 } });
const echo = await call('start_agent_session', { agent_name: 'echo-agent', prompt: 'hello' }, 'start_echo');
const echoID = echo?.structuredContent?.session_id;
await call('resume_agent_session', { session_id: echoID, prompt: 'again' });
await call('start_agent_sessions', { sessions: [{ agent_name: 'add', parameters: { a: 1, b: 1 } }, { agent_name: 'echo-agent', prompt: 'fan' }] });
const addID = added?.structuredContent?.session_id;
await call('get_agent_session_status', { session_id: addID });
await call('get_agent_session_result', { session_id: addID, wait_seconds: 5 });
await call('list_agent_sessions', { agent_name: 'add' });
await call('rerun_session', { session_id: addID });
await call('stop_agent_session', { session_id: addID });
await call('list_schedules', {});
await call('get_session_tree', { session_id: echoID });
await call('list_input_requests', {});
await call('get_input_request', { request_id: process.env.REQUEST_ID });
await call('answer_input_request', { request_id: process.env.REQUEST_ID, answer: { approved: false, comment: 'no' } });
{
  // ask_human is an agent's: its client names its session. Nobody answers; the question expires.
  const agent = new Client({ name: 'tsclient-agent', version: '1.0.0' });
  await agent.connect(new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
    requestInit: { headers: { 'X-Agent-Session-Id': process.env.ASK_SESSION } },
  }));
  await agent.listTools();
  try {
    const res = await agent.callTool({ name: 'ask_human', arguments: { prompt: 'Which region?', timeout_seconds: 1 } });
    out.calls.ask_human = {
      is_error: res.isError === true,
      structured: res.structuredContent ?? null,
      texts: (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text),
    };
  } catch (e) {
    fail(`ask_human: callTool threw: ${e.message}`);
  }
  await agent.close();
}

// A tool error from a tool with an output schema: returned, not thrown.
await call('get_agent_schema', { agent_name: 'no-such-agent' }, 'unknown_agent');
// Two wrong values and one unknown argument in one call: all three named.
await call('start_agent_session', { agent_name: 'add', mode: 'fast', parameters: 'x', agnt: 'add' }, 'bad_arguments');

// A sync call cancelled by the client (AbortController) once the first progress notification named the
// session: the server must stop that session.
const abort = new AbortController();
let firstProgress = null;
const reason = 'the user pressed Escape';
try {
  await client.callTool(
    { name: 'start_agent_session', arguments: { agent_name: 'slow', parameters: { key: process.env.SLOW_KEY } } },
    undefined,
    {
      signal: abort.signal,
      onprogress: (p) => {
        if (firstProgress === null) {
          firstProgress = p.message ?? '';
          abort.abort(reason);
        }
      },
    },
  );
  fail('the cancelled call returned');
} catch (e) {
  out.cancel_error = e.message;
}
out.first_progress = firstProgress;
out.cancel_reason = reason;
// The SDK sends notifications/cancelled in the background, and closing the client would abort that
// request: wait for the session to end first, as a client that checks on a cancelled call does.
const cancelledID = /^session (ses_\S+) /.exec(firstProgress ?? '')?.[1];
if (cancelledID) {
  const res = await call('get_agent_session_result', { session_id: cancelledID, wait_seconds: 20 }, 'after_cancel');
  out.status_after_cancel = res?.structuredContent?.status ?? null;
}

await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
