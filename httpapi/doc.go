// Package httpapi serves an [orchestrator.Coordinator] over HTTP ([NewHandler]) and implements one over
// HTTP ([Client]), so a runner, a tool or an MCP server works the same against an embedded coordinator or
// a remote one. The wire contract: JSON bodies with snake_case field names, errors as {"error": code,
// "message": text, …details}.
//
// docs/openapi.yaml in the repository describes the same API in OpenAPI 3.1, for clients in other
// languages; the tests keep it in step with [Routes] and check real answers against it.
//
// # Routes
//
// Roles: A admin, C client, T the shared runner token (registration only), R a registered runner's own
// credential (see "Runners" below), M a metrics scraper's token ([RoleMetrics]); admin may call every route. GET /health, GET /ready and the
// dashboard's pages (GET /ui/…) are open.
//
//	GET    /health                              open   {"status":"ok"}: liveness (the process serves)
//	GET    /ready                               open   {"status":"ready"}, or 503 not_ready while the store cannot write
//	GET    /agents[?tags=a,b&type=]             C R    {agents:[…]}; deterministic agents carry parameters_schema
//	GET    /agents/{name}                       C R    the agent, with both schemas (and its blueprint for registry agents)
//	GET    /agents/{name}/schema                C R    {name, type, parameters_schema, output_schema}
//	POST   /agents                              A      blueprint → 201 the agent
//	PUT    /agents/{name}                       A      blueprint → the agent
//	PATCH  /agents/{name}                       A      JSON merge patch (RFC 7386) of the blueprint → the agent
//	DELETE /agents/{name}                       A      204
//	POST   /runs[?wait=]                        C R    StartRunParams → 201 {run_id, session_id, status[, result, error]}
//	GET    /runs[?status=&session_id=&runner_id=&agent_name=&limit=&after=]   C   {runs, next_cursor}
//	GET    /runs/{id}                           C R    the run
//	GET    /runs/{id}/result[?wait=]            C R    {run_id, session_id, status, result?, error?}: the run's own outcome
//	POST   /runs/{id}/stop                      C      the run
//	GET    /sessions[?status=a,b&agent_name=&parent_session_id=&order=&limit=&cursor=]  C R  {sessions, next_cursor}
//	GET    /sessions/{id}[?wait=]               C R    the session (long-polled until it ends)
//	GET    /sessions/{id}/result[?wait=]        C R    {session_id, status, result?, error?}
//	GET    /sessions/{id}/tree[?depth=&max_children=&max_nodes=]  C R  {root: node}: usage and subtree sums
//	POST   /sessions/{id}/stop                  C R    the session
//	DELETE /sessions/{id}                       C      204; 409 while it runs
//	GET    /sessions/{id}/artifacts             C R    {artifacts}
//	GET    /sessions/{id}/artifacts/{name...}   C R    the artifact's bytes (ETag = sha256, Range → 206)
//	PUT    /sessions/{id}/artifacts/{name...}   C R    any body → 201 the artifact (RawBody: streamed to the bucket)
//	POST   /sessions/{id}/rerun                 C      {parameters?: merge patch} → 201 {run_id, session_id, status}; 409 while it runs
//	POST   /sessions/rerun                      C      {status, agent_name, created_after, limit, dry_run} → {count, session_ids, reruns, errors}
//	GET    /sessions/{id}/events?after=&limit=[&wait=]  C R  {events, last_seq}; text/event-stream when asked
//	GET    /sessions/{id}/events/stream         C R    Server-Sent Events
//	POST   /sessions/{id}/events                C R    event | [events] | {events} → 201 {events}
//	POST   /sessions/{id}/input-requests        C R    {prompt, schema?, timeout_seconds?} → 201 the input request (the session waits)
//	GET    /input-requests[?status=&session_id=&limit=&after=]  C R  {input_requests, next_cursor}; R: its own sessions' only (session_id required)
//	GET    /input-requests/{id}[?wait=]         C R    the input request (long-polled until it is no longer open)
//	POST   /input-requests/{id}/answer          C      {answer} → the answered request; 400 answer_validation_failed, 409 request_closed
//	POST   /schedules                           C      ScheduleParams → 201 the schedule; 400 invalid_cron, invalid_timezone, invalid_overlap
//	GET    /schedules[?agent_name=&limit=&after=]  C R  {schedules, next_cursor}
//	GET    /schedules/{id}                      C R    the schedule
//	PATCH  /schedules/{id}                      C      {paused?, cron?, timezone?, overlap?, parameters?} → the schedule
//	DELETE /schedules/{id}                      C      204 (the sessions it started stay)
//	POST|GET|DELETE /mcp                        C      MCP over streamable HTTP (Config.MCP; 404 when unset)
//	GET    /metrics                             M      Prometheus metrics (Config.Metrics; 404 when unset)
//	GET    /ui/                                 open   the dashboard: its pages and assets under /ui/ (Config.UI; 404 when unset)
//	GET    /runners                             A      {runners}
//	DELETE /runners/{id}                        A      204
//	POST   /runner/register                     T      RunnerRegistration → Registration (with runner_secret); 409 runner_identity_in_use
//	POST   /runner/heartbeat                    R      {runner_id?} → 204; 401 once the runner is offline (register again)
//	GET    /runner/runs?runner_id=&max=&wait=   R      {runs, stop} or 204
//	POST   /runner/runs/{id}/started|completed|failed|stopped  R  {runner_id?, result?, error?} → 204; 409 when not held
//	POST   /runner/reports                      R      {reports:[{runner_id?, run_id, status, result?, error?}]} → {results:[{run_id, status, error?, message?}]}
//	DELETE /runner/{id}                         R      204 (graceful deregistration)
//
// POST /runs starts or resumes a session. Its "type" says which: start (the default, with agent_name) or
// resume (with session_id and a prompt). Its "mode" says how the caller learns the outcome: async_poll
// (the default) answers at once and the caller polls (GET /sessions/{id}/result?wait=), sync waits for
// the run to end — up to ?wait=, at most [Config.MaxWait] — and answers with its result, and
// async_callback resumes the parent session with the result. A sync answer is its own run's outcome even
// when a callback resumed the session the moment the run ended; GET /runs/{id}/result?wait= goes on
// waiting for the run after a sync start's wait, with the same answer. So a resume that waits for its answer is
// {"type": "resume", "mode": "sync", "session_id": …, "prompt": …}. The legacy {"mode": "resume"} is still
// read as type resume: in sync mode when ?wait= is given, async_poll otherwise.
//
// POST /runner/reports is the batch form of the report routes (at most [MaxReportsPerRequest]): a runner
// sends the reports that became ready while its previous one was under way together, and the coordinator
// records them in one transaction. Each result carries the status its report alone would have got (204
// when applied) and, when refused, that route's error fields; the request fails as a whole only when it
// is malformed.
//
// # Runners
//
// The shared runner token (T, [RoleRunner]) only registers. The registration's answer carries the
// runner's secret, and every later call of that runner authenticates with its own credential
// ([RoleRunnerInstance]): "Authorization: Bearer <runner_id>.<runner_secret>" ([RunnerCredential];
// [Client] does this by itself). The coordinator keeps only the secret's hash; the credential stops
// working when the runner goes offline or is removed (DELETE /runners/{id}), and the runner registers
// again. A runner registering again presents its secret (runner_secret in the registration): registering
// under the id of a runner that is not offline (online or stale) without it is 409 runner_identity_in_use
// and changes nothing — the id follows from hostname, project directory and profile, which anyone can name.
// An unknown or offline runner's id may be taken without it; an admin may remove a runner whose process is
// gone (DELETE /runners/{id}) so that its successor registers at once.
//
// A runner's credential acts for that runner only. On the /runner/* routes the runner is the credential's:
// runner_id may be left out, and one that names another runner is 403 runner_mismatch (in the batch, for
// that report alone); a report on a run the runner does not hold is 409 run_not_held. The other routes R
// may call are what a runner's gateway forwards for its executors, limited to the runner's scope: the
// sessions whose current or last run it holds or held, and their descendants. Every session (and run)
// outside it is 404 session_not_found (run_not_found), the same answer as for one that does not exist.
// Listing sessions needs a parent_session_id in scope, starting a run a parent_session_id (or, for a
// resume, a session_id) in scope — 403 parent_session_required without one — and callback_url is not
// available.
//
// # Conventions
//
// Durations in queries are Go durations ("30s") or seconds ("30", "1.5"); waits above [Config.MaxWait]
// are 400. Listings are oldest first; GET /sessions?order=newest lists the newest first, its
// next_cursor continuing toward older sessions. Bodies are limited to [Config.MaxBodyBytes] (413 beyond), the reports that carry a run's result
// to [Config.MaxReportBytes], which follows the coordinator's result limit; a registering runner is told
// that limit (max_result_bytes) and cuts its results to fit. In POST /runner/reports each report is
// accepted or refused (result_too_large, 413) on its own. Bodies are decoded leniently —
// unknown fields are ignored, for forward compatibility — except blueprints, where a misspelt key is an
// error; wrong types, malformed JSON and trailing data are 400 with a message that names the problem. A
// request that may change something (POST, PUT, PATCH, DELETE) carries a JSON body, with Content-Type:
// application/json, or no body: anything else is 415 unsupported_media_type (see "Browsers"; with curl,
// send bodies with --json rather than -d, which sends form encoding).
//
// # Event streams
//
// GET /sessions/{id}/events with "Accept: text/event-stream", and GET /sessions/{id}/events/stream, send
// the session's events as Server-Sent Events: each event as a frame with "id: <seq>", "event:
// <event_type>" and "data: <the event's JSON>". The stream replays the events after the Last-Event-ID
// header (or ?after=), then follows new ones, with a ": heartbeat" comment whenever it has been idle for
// [Config.Heartbeat]. When the session has ended — at once for an ended session, or as soon as a running
// one ends — the stream sends the remaining events, then one frame without an id,
//
//	event: end
//	data: {"session_id":"ses_…","status":"completed","last_seq":12}
//
// and closes. A client tells that clean end from a dropped connection, which it should reopen with
// Last-Event-ID (a browser's EventSource does so by itself, so its "end" listener should call close()).
// An AI session that is resumed later has new events: open the stream again. A session deleted while its
// stream is open ends it with an "error" frame ({"error":"session_not_found", …}).
//
// A caller's X-Agent-Session-Id header becomes the parent_session_id of a new session that names none:
// that is how an AI agent's MCP calls link the children it starts. A W3C traceparent header, on any route,
// puts what the request causes in the caller's trace: a run started by POST /runs keeps it
// (Run.TraceParent, the session's trace_id), and [Client] sends the trace context of the context it is
// called with.
//
// Text must be UTF-8 without NUL characters: a path, query parameter, X-Agent-* or Last-Event-ID header
// or request body (a JSON string escape \u0000 or half a surrogate pair included) that holds anything
// else is 400 invalid_encoding, on every route, before anything is looked up or changed.
//
// GET /health is the liveness check; GET /ready the readiness check: it makes a small real write to the
// store (at most about once a second, see store.WriteChecker) and answers 503
// {"error":"not_ready"} while that fails — a full disk, a read-only or unreachable database — so a load
// balancer can stop sending work to a coordinator that cannot record it.
//
// # Limits
//
// The routes that may hold a request open — POST /runs, GET /sessions/{id}, /result, /events and the
// event stream, GET /runner/runs, POST and GET /mcp ([Route].LongPoll) — are limited to
// [Config.MaxLongPolls] requests open at once per credential (default [DefaultMaxLongPolls]): per bearer
// token, or with no tokens per client IP address. One more is 429 {"error":"too_many_long_polls"} with
// Retry-After: 1; [Client] retries such answers.
//
// # Browsers
//
// A browser lets any web page send requests to any address, and a page whose name is made to resolve to
// the coordinator's address (DNS rebinding) even reads the answers: on an open API that would let any
// page a person opens start agents on their machine. So every route but GET /health and GET /ready
// refuses what only a web page would send:
//
//   - a body that is not JSON on POST, PUT, PATCH and DELETE (415 unsupported_media_type), since a page may
//     send JSON to another origin only after a CORS preflight, which the API does not answer; routes that
//     take other bodies say so ([Route].RawBody);
//   - a browser's request from another origin (403 origin_not_allowed): Sec-Fetch-Site is not
//     same-origin or none, or, without it, the Origin header names another host than the Host header — unless
//     Origin is one of [Config.AllowedOrigins]. A link from another site may still open the dashboard's pages;
//   - on an open API, or on any API once [Config.AllowedHosts] is set, a Host header other than localhost,
//     a name under .localhost, an IP address or an allowed host (421 host_not_allowed).
//
// Clients that are not browsers send neither Origin nor Sec-Fetch-Site, and name the address they dial.
// The dashboard (/ui/) calls the API from its own origin, so it passes all three.
//
// # Authentication
//
// [Config.Tokens] maps bearer tokens to roles ([ParseTokens]); tokens are compared in
// constant time. Runners' own credentials are checked by the Coordinator ([RunnerVerifier]). A missing or
// unknown token is 401 with WWW-Authenticate: Bearer; a role the route does not allow is 403. With no
// tokens the API is open — runner credentials are not checked either; [CheckListenAddr] lets a binary
// refuse that on a non-loopback address.
package httpapi
