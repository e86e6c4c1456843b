// Package mcpserver serves an [orchestrator.Coordinator] to AI agents as a Model Context Protocol server,
// built on the official SDK, github.com/modelcontextprotocol/go-sdk. It lives in its own
// package so that programs which do not import it do not link the SDK and its dependencies.
//
// [New] builds the server over any Coordinator — a coordinator.Coordinator in-process, or an
// httpapi.Client for a remote coordinator — and [NewHandler] serves it over streamable HTTP (mount it at
// /mcp). The same server runs over stdio with mcp.StdioTransport (see examples/mcp-stdio).
//
// # Tools
//
//	list_agent_blueprints    {tags?}                                   {agents:[{name, type, description, tags, parameters_schema?, output_schema?}]}
//	get_agent_schema         {agent_name}                              {name, type, description, parameters_schema, output_schema}
//	start_agent_session      {agent_name, parameters?, prompt?, mode?, project_dir?, output_schema?}
//	                         sync → {session_id, run_id, status, result?, error?}; async → {session_id, run_id, status}
//	start_agent_sessions     {sessions: [{agent_name, parameters?, prompt?, project_dir?, output_schema?}], mode?}
//	                         async only, all or none → {sessions: [{session_id, run_id, status}]}
//	resume_agent_session     {session_id, prompt, mode?}               as start_agent_session
//	get_agent_session_status {session_id}                              the session's status and basic fields
//	get_agent_session_result {session_id, wait_seconds?}               {session_id, status, result?, error?}
//	list_agent_sessions      {status?, agent_name?, parent_session_id?, limit?, cursor?}  {sessions, next_cursor?}
//	stop_agent_session       {session_id, cascade?}                    the session's status and basic fields
//	list_schedules           {agent_name?, limit?, cursor?}            {schedules, next_cursor?} (read-only)
//	get_session_tree         {session_id, depth?}                      {sessions: [{session_id, …, cost_usd, subtree_cost_usd, …}]}
//	ask_human                {prompt, schema?, timeout_seconds?}       the input request, once answered (waits)
//	get_input_request        {request_id, wait_seconds?}               the input request
//	list_input_requests      {status?, session_id?, limit?, cursor?}   {input_requests, next_cursor?}
//	answer_input_request     {request_id, answer}                      the answered request (people, not agents)
//	rerun_session            {session_id, parameters?: merge patch}    {session_id, run_id, status} of the new session
//
// Every successful answer is a JSON object, sent both as structured content and as its JSON text, and
// every tool declares its outputSchema: the answer matches it exactly (the server checks each answer
// before sending it). The server advertises the tools capability without listChanged: the tool set never
// changes, and a stateless server could not send the notification anyway.
//
// # Calling context
//
// Who is calling comes with each HTTP request, so one server serves every agent (the SDK hands each tool
// call the headers of the request that carried it):
//
//   - X-Agent-Session-Id: the calling agent's own session. It becomes the parent_session_id of the
//     sessions it starts, and async_callback mode needs it (the parent is resumed with the child's result).
//   - X-Agent-Tags: comma-separated tags; list_agent_blueprints shows only agents carrying all of them. It
//     narrows discovery; it is not access control (tokens are).
//   - X-Additional-Demands: a JSON object of [orchestrator.Demands] merged into every run the agent starts
//     or resumes (demands only narrow: a conflicting value is an error).
//
// [Config.SessionID], [Config.Tags] and [Config.Demands] give the same context to a server without headers
// (stdio); with both, the header's session id wins, tags are united and demands merged.
//
// # Errors
//
// Bad input is never a protocol error. Every failure is a tool error (IsError) whose first text block is
// a JSON document, {"error": code, "message": text, …details}, followed by a text block telling the model
// what to do next. An error carries no structured content: clients validate structured content against
// the tool's outputSchema whatever the result (the MCP TypeScript SDK's callTool does, and throws), and an
// error document does not match it.
//
//   - Arguments that do not match the tool's inputSchema: "invalid_arguments", with a validation_errors
//     entry {path, message, schema_path} for every problem at once, each phrased as what to do: "missing
//     required argument 'agent_name': …", "unknown argument 'agent'; did you mean 'agent_name'?",
//     "argument 'mode': 'fast' is not one of […]". (The arguments are checked by the project's validator
//     against the advertised inputSchema, not by the SDK, which stops at the first problem.)
//   - Parameters that do not match the agent's parameters_schema: the HTTP API's 400 body
//     ("parameter_validation_failed", validation_errors with $.paths, parameters_schema), and a sentence
//     telling the model to fix the parameters and call again.
//   - A malformed calling-context header (X-Additional-Demands, X-Agent-Tags) or an unknown
//     X-Agent-Session-Id: the hint says that it is the MCP client's configuration, which the model cannot
//     fix by calling again, and that the user should. Only the tools that read the header fail.
//   - Anything else: the API's error body and a hint (agent_not_found → list_agent_blueprints, …).
//
// # Long waits
//
// A sync start_agent_session or resume_agent_session waits up to [Config.SyncWait] (default 10 minutes) and
// then answers with the session id and its current status, so the model can go on with
// get_agent_session_result; the session keeps running. While a call waits, a client that sent a progress
// token gets progress notifications: the first as soon as the session exists, then one every
// [Config.ProgressInterval], which keeps clients that reset their timeout on progress from giving up. Each
// message begins with "session <session_id> ": the first reads "session ses_… started (run run_…);
// waiting for it to end", the next ones "session ses_… waiting for it to end (1m30s)". A client that gives
// up can still find (and stop) the session; get_agent_session_result's waits send the same messages.
//
// # Cancellation
//
// A client that cancels a sync start_agent_session or resume_agent_session stops the run the call started:
// the session gets an [EventCallCancelled] event (with the client's reason, if it gave one), then the run
// is stopped and the session ends "stopped". Through a runner's gateway, which lets a run write events to
// its own session only, the event goes to the calling session instead. Reaching SyncWait is not a
// cancellation.
//
// How a cancellation travels depends on the transport and the protocol version. Over stdio (and any
// connection-oriented transport) it is a notifications/cancelled on the same connection. Over streamable
// HTTP under the sessionless protocol (2026-07-28 and later), it is the client closing the call's
// request. Under earlier versions (2025-11-25, what most clients speak) it is a notifications/cancelled in
// a request of its own, which a stateless server sees apart from the call: [NewHandler] routes it to the
// call, telling clients apart by a random Mcp-Session-Id it hands out at initialize (it stores nothing
// under it). Behind a load balancer, route requests by Mcp-Session-Id for a cancellation to reach the
// replica running the call.
//
// A client that goes away without cancelling — a lost connection, a closed stdio, an HTTP request dropped
// without a notifications/cancelled under an earlier protocol — does not stop anything: the MCP
// specification says a disconnection is not a cancellation, and the work may be worth its result. The call
// stops waiting; the session runs on and ends by itself (within its agent's timeout), and can be found by
// its id (from the first progress notification) or with list_agent_sessions (parent_session_id).
package mcpserver
