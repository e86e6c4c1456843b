package httpapi

import (
	"net/http"
	"slices"
)

// Route is one endpoint of the API and who may call it.
type Route struct {
	// Method is the HTTP method (GET routes also answer HEAD).
	Method string
	// Pattern is the net/http.ServeMux path pattern, such as "/agents/{name}".
	Pattern string
	// Roles may call the route; admin may call every route whether listed or not.
	Roles []Role
	// Public routes need no token at all (GET /health, GET /ready).
	Public bool
	// LongPoll routes may hold the request open (a wait parameter or a stream).
	LongPoll bool
	// RawBody routes take a body of any media type, as it is (an upload). Every other route that may
	// change something (POST, PUT, PATCH, DELETE) takes a JSON body or none: a body sent with another
	// Content-Type, or with none, is 415 unsupported_media_type — the media types a web page may send to
	// another origin without asking first are never JSON.
	RawBody bool
}

// String returns "METHOD /pattern".
func (rt Route) String() string { return rt.Method + " " + rt.Pattern }

// Allows reports whether role may call the route.
func (rt Route) Allows(role Role) bool {
	return rt.Public || role == RoleAdmin || slices.Contains(rt.Roles, role)
}

type handlerFunc func(s *server, w http.ResponseWriter, r *http.Request) error

type routeDef struct {
	Route
	h handlerFunc
}

var (
	clients = []Role{RoleClient}
	// clientsRunners: clients, and registered runners for what their gateways forward (scoped to their
	// runs' sessions: see runnerScoped).
	clientsRunners = []Role{RoleClient, RoleRunnerInstance}
	// registrars: the shared runner token, which only registers.
	registrars = []Role{RoleRunner}
	// runners: a registered runner, for itself.
	runners   = []Role{RoleRunnerInstance}
	adminOnly = []Role(nil)
)

// routeTable is the whole API. The role test in auth_test.go is generated from it, so a route added here
// is checked against every role.
var routeTable = []routeDef{
	{Route{Method: "GET", Pattern: "/health", Public: true}, (*server).health},
	{Route{Method: "GET", Pattern: "/ready", Public: true}, (*server).ready},

	{Route{Method: "GET", Pattern: "/agents", Roles: clientsRunners}, (*server).listAgents},
	{Route{Method: "GET", Pattern: "/agents/{name}", Roles: clientsRunners}, (*server).getAgent},
	{Route{Method: "GET", Pattern: "/agents/{name}/schema", Roles: clientsRunners}, (*server).getAgentSchema},
	{Route{Method: "POST", Pattern: "/agents", Roles: adminOnly}, (*server).createAgent},
	{Route{Method: "PUT", Pattern: "/agents/{name}", Roles: adminOnly}, (*server).putAgent},
	{Route{Method: "PATCH", Pattern: "/agents/{name}", Roles: adminOnly}, (*server).patchAgent},
	{Route{Method: "DELETE", Pattern: "/agents/{name}", Roles: adminOnly}, (*server).deleteAgent},

	{Route{Method: "POST", Pattern: "/runs", Roles: clientsRunners, LongPoll: true}, (*server).startRun},
	{Route{Method: "GET", Pattern: "/runs", Roles: clients}, (*server).listRuns},
	{Route{Method: "GET", Pattern: "/runs/{id}", Roles: clientsRunners}, (*server).getRun},
	{Route{Method: "GET", Pattern: "/runs/{id}/result", Roles: clientsRunners, LongPoll: true}, (*server).getRunResult},
	{Route{Method: "POST", Pattern: "/runs/{id}/stop", Roles: clients}, (*server).stopRun},

	{Route{Method: "GET", Pattern: "/sessions", Roles: clientsRunners}, (*server).listSessions},
	{Route{Method: "GET", Pattern: "/sessions/{id}", Roles: clientsRunners, LongPoll: true}, (*server).getSession},
	{Route{Method: "GET", Pattern: "/sessions/{id}/result", Roles: clientsRunners, LongPoll: true}, (*server).getSessionResult},
	{Route{Method: "GET", Pattern: "/sessions/{id}/tree", Roles: clientsRunners}, (*server).getSessionTree},
	{Route{Method: "POST", Pattern: "/sessions/{id}/stop", Roles: clientsRunners}, (*server).stopSession},
	{Route{Method: "DELETE", Pattern: "/sessions/{id}", Roles: clients}, (*server).deleteSession},
	{Route{Method: "GET", Pattern: "/sessions/{id}/artifacts", Roles: clientsRunners}, (*server).listArtifacts},
	{Route{Method: "GET", Pattern: "/sessions/{id}/artifacts/{name...}", Roles: clientsRunners}, (*server).getArtifact},
	{Route{Method: "PUT", Pattern: "/sessions/{id}/artifacts/{name...}", Roles: clientsRunners, RawBody: true}, (*server).putArtifact},
	{Route{Method: "POST", Pattern: "/sessions/{id}/rerun", Roles: clients}, (*server).rerunSession},
	{Route{Method: "POST", Pattern: "/sessions/rerun", Roles: clients}, (*server).rerunSessions},
	{Route{Method: "GET", Pattern: "/sessions/{id}/events", Roles: clientsRunners, LongPoll: true}, (*server).listEvents},
	{Route{Method: "GET", Pattern: "/sessions/{id}/events/stream", Roles: clientsRunners, LongPoll: true}, (*server).streamEvents},
	{Route{Method: "POST", Pattern: "/sessions/{id}/events", Roles: clientsRunners}, (*server).appendEvents},

	// Human input (docs/human-input.md): clients and admin answer; an agent, through its runner's gateway,
	// asks for its own session and reads its own requests, and can never answer.
	{Route{Method: "POST", Pattern: "/sessions/{id}/input-requests", Roles: clientsRunners}, (*server).askHuman},
	{Route{Method: "GET", Pattern: "/input-requests", Roles: clientsRunners}, (*server).listInputRequests},
	{Route{Method: "GET", Pattern: "/input-requests/{id}", Roles: clientsRunners, LongPoll: true}, (*server).getInputRequest},
	{Route{Method: "POST", Pattern: "/input-requests/{id}/answer", Roles: clients}, (*server).answerInputRequest},

	// Schedules (recurring runs): clients manage them; agents, through their runner's gateway, read them.
	{Route{Method: "POST", Pattern: "/schedules", Roles: clients}, (*server).createSchedule},
	{Route{Method: "GET", Pattern: "/schedules", Roles: clientsRunners}, (*server).listSchedules},
	{Route{Method: "GET", Pattern: "/schedules/{id}", Roles: clientsRunners}, (*server).getSchedule},
	{Route{Method: "PATCH", Pattern: "/schedules/{id}", Roles: clients}, (*server).patchSchedule},
	{Route{Method: "DELETE", Pattern: "/schedules/{id}", Roles: clients}, (*server).deleteSchedule},

	// MCP over streamable HTTP (Config.MCP): POST carries calls, GET a stream, DELETE ends a session.
	// Runners have none of it: the coordinator's MCP server acts with the coordinator's own rights, and a
	// runner's agents reach MCP through the runner's gateway, scoped to their run.
	{Route{Method: "POST", Pattern: "/mcp", Roles: clients, LongPoll: true}, (*server).mcp},
	{Route{Method: "GET", Pattern: "/mcp", Roles: clients, LongPoll: true}, (*server).mcp},
	{Route{Method: "DELETE", Pattern: "/mcp", Roles: clients}, (*server).mcp},

	// Prometheus metrics (Config.Metrics): a scraper's own token, or admin.
	{Route{Method: "GET", Pattern: "/metrics", Roles: []Role{RoleMetrics}}, (*server).metrics},

	// The dashboard (Config.UI): its pages are public; their API calls carry the person's token.
	{Route{Method: "GET", Pattern: "/ui/", Public: true}, (*server).ui},

	{Route{Method: "GET", Pattern: "/runners", Roles: adminOnly}, (*server).listRunners},
	{Route{Method: "DELETE", Pattern: "/runners/{id}", Roles: adminOnly}, (*server).deleteRunner},

	{Route{Method: "POST", Pattern: "/runner/register", Roles: registrars}, (*server).register},
	{Route{Method: "POST", Pattern: "/runner/heartbeat", Roles: runners}, (*server).heartbeat},
	{Route{Method: "GET", Pattern: "/runner/runs", Roles: runners, LongPoll: true}, (*server).pollWork},
	{Route{Method: "POST", Pattern: "/runner/runs/{id}/started", Roles: runners}, (*server).reportStarted},
	{Route{Method: "POST", Pattern: "/runner/runs/{id}/completed", Roles: runners}, (*server).reportCompleted},
	{Route{Method: "POST", Pattern: "/runner/runs/{id}/failed", Roles: runners}, (*server).reportFailed},
	{Route{Method: "POST", Pattern: "/runner/runs/{id}/stopped", Roles: runners}, (*server).reportStopped},
	{Route{Method: "POST", Pattern: "/runner/reports", Roles: runners}, (*server).reportRuns},
	{Route{Method: "DELETE", Pattern: "/runner/{id}", Roles: runners}, (*server).deregister},
}

// Routes returns the API's routes with the roles that may call each, in documentation order.
func Routes() []Route {
	out := make([]Route, len(routeTable))
	for i, rd := range routeTable {
		out[i] = rd.Route
		out[i].Roles = slices.Clone(rd.Roles)
	}
	return out
}
