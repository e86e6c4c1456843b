// Package mcpserver serves an [orchestrator.Coordinator] to AI agents as a Model Context Protocol server
// (DESIGN §8), built on the official SDK, github.com/modelcontextprotocol/go-sdk. It lives in its own
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
//	resume_agent_session     {session_id, prompt, mode?}               as start_agent_session
//	get_agent_session_status {session_id}                              the session's status and basic fields
//	get_agent_session_result {session_id, wait_seconds?}               {session_id, status, result?, error?}
//	list_agent_sessions      {status?, agent_name?, parent_session_id?, limit?, cursor?}  {sessions, next_cursor?}
//	stop_agent_session       {session_id}                              the session's status and basic fields
//
// Every successful answer is a JSON object, sent both as structured content and as its JSON text.
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
// Bad input is never a protocol error. Parameters that do not match the agent's parameters_schema give a
// tool error (IsError) whose first text block — and structured content — is the same JSON document as the
// HTTP API's 400 body (seed 001 §6: error, message, agent_name, validation_errors with $.paths,
// parameters_schema), followed by a sentence telling the model to fix the parameters and call again. Other
// errors are tool errors with the API's {"error": code, "message": text, …details} body and a hint.
//
// # Long waits
//
// A sync start waits up to [Config.SyncWait] (default 10 minutes) and then answers with the session id and
// its current status, so the model can go on with get_agent_session_result. While a call waits, a client
// that sent a progress token gets a progress notification every [Config.ProgressInterval], which keeps
// clients that reset their timeout on progress from giving up.
package mcpserver
