package mcpserver

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentorchestrator/orchestrator"
)

// ListSchedulesInput is the arguments of list_schedules.
type ListSchedulesInput struct {
	AgentName string `json:"agent_name,omitempty" jsonschema:"only the schedules of this agent"`
	Limit     int    `json:"limit,omitempty" jsonschema:"page size"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page, to continue the listing"`
}

// ScheduleListOutput is the answer of list_schedules.
type ScheduleListOutput struct {
	Schedules  []*orchestrator.Schedule `json:"schedules"`
	NextCursor string                   `json:"next_cursor,omitempty" jsonschema:"pass it as cursor to get the next page; absent on the last page"`
}

// addScheduleTools adds list_schedules: schedules are read-only over MCP (people and programs manage
// them through the API and ao).
func (s *server) addScheduleTools(srv *mcp.Server) {
	addTool(s, srv, &mcp.Tool{
		Name:  "list_schedules",
		Title: "List schedules",
		Description: fmt.Sprintf(`List the schedules (recurring runs), oldest first, in pages: {schedules: [{id, agent_name, parameters, cron, timezone, overlap, paused, next_fire_at, queued, last_fired_at, last_session_id, last_error, created_at, updated_at}], next_cursor}.

A schedule starts a session of agent_name with parameters at every tick of cron (read in timezone); each such session's metadata carries {"schedule_id": id}, and last_session_id is the latest. overlap says what a tick does while the previous session is still active: skip, allow (start another) or queue (start when it ends). Read-only: schedules are managed through the API or the ao command. Called by an agent through its runner, it lists only the schedule that started the agent's own tree of sessions, if one did.
agent_name (optional) filters; limit is the page size (default %d, at most %d); pass next_cursor as cursor to get the next page.`, DefaultListLimit, MaxListLimit),
		Annotations: readOnly(),
	}, func(p map[string]*jsonschema.Schema) {
		p["limit"].Minimum = jsonschema.Ptr(1.0)
		p["limit"].Maximum = jsonschema.Ptr(float64(MaxListLimit))
	}, completeOutput, s.listSchedules)
}

func (s *server) listSchedules(ctx context.Context, _ *mcp.CallToolRequest, in ListSchedulesInput) (ScheduleListOutput, error) {
	sc, ok := s.coord.(orchestrator.Scheduler)
	if !ok {
		return ScheduleListOutput{}, orchestrator.Errorf(orchestrator.ErrNotFound, "schedules_unavailable", "this coordinator keeps no schedules")
	}
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	list, err := sc.ListSchedules(ctx, orchestrator.ScheduleFilter{AgentName: in.AgentName, AfterID: in.Cursor, Limit: limit})
	if err != nil {
		return ScheduleListOutput{}, err
	}
	out := ScheduleListOutput{Schedules: list}
	if out.Schedules == nil {
		out.Schedules = []*orchestrator.Schedule{}
	}
	if len(list) == limit {
		out.NextCursor = list[len(list)-1].ID
	}
	return out, nil
}
