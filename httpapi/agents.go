package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/mergepatch"
)

func (s *server) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// agentList is the body of GET /agents.
type agentList struct {
	Agents []*orchestrator.AgentInfo `json:"agents"`
}

func (s *server) listAgents(w http.ResponseWriter, r *http.Request) error {
	t, err := orchestrator.ParseAgentType(r.URL.Query().Get("type"))
	if err != nil {
		return badQuery("type: %v", err)
	}
	agents, err := s.coord.ListAgents(r.Context(), orchestrator.ListAgentsParams{Type: t, Tags: queryList(r, "tags")})
	if err != nil {
		return err
	}
	if agents == nil {
		agents = []*orchestrator.AgentInfo{}
	}
	writeJSON(w, http.StatusOK, agentList{agents})
	return nil
}

func (s *server) getAgent(w http.ResponseWriter, r *http.Request) error {
	name, err := pathID(r, "name")
	if err != nil {
		return err
	}
	a, err := s.coord.GetAgent(r.Context(), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// agentSchemaBody is the body of GET /agents/{name}/schema: both schemas, the implicit prompt schema standing
// in for an AI agent that declares none. A schema that does not exist is null.
type agentSchemaBody struct {
	Name             string                 `json:"name"`
	Type             orchestrator.AgentType `json:"type"`
	ParametersSchema json.RawMessage        `json:"parameters_schema"`
	OutputSchema     json.RawMessage        `json:"output_schema"`
}

func (s *server) getAgentSchema(w http.ResponseWriter, r *http.Request) error {
	name, err := pathID(r, "name")
	if err != nil {
		return err
	}
	a, err := s.coord.GetAgent(r.Context(), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, agentSchema(a))
	return nil
}

func agentSchema(a *orchestrator.AgentInfo) agentSchemaBody {
	out := agentSchemaBody{Name: a.Name, Type: a.Type}
	out.ParametersSchema, out.OutputSchema = a.Schemas()
	return out
}

// Blueprint bodies are decoded strictly: a misspelt key ("parameter_schema") in an agent definition is a
// mistake to report, not a field to ignore (as [orchestrator.ParseBlueprint] does for blueprint files).
func decodeBlueprint(r *http.Request) (*orchestrator.Blueprint, error) {
	var b orchestrator.Blueprint
	if err := decodeBody(r, &b, true); err != nil {
		return nil, err
	}
	return &b, nil
}

func (s *server) createAgent(w http.ResponseWriter, r *http.Request) error {
	b, err := decodeBlueprint(r)
	if err != nil {
		return err
	}
	a, err := s.coord.CreateAgent(r.Context(), b)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/agents/"+url.PathEscape(a.Name))
	writeJSON(w, http.StatusCreated, a)
	return nil
}

func (s *server) putAgent(w http.ResponseWriter, r *http.Request) error {
	name, err := pathID(r, "name")
	if err != nil {
		return err
	}
	b, err := decodeBlueprint(r)
	if err != nil {
		return err
	}
	a, err := s.coord.UpdateAgent(r.Context(), name, b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// patchAgent applies a JSON merge patch (RFC 7386) to the agent's current blueprint and stores the result
// with UpdateAgent: keys in the patch replace the blueprint's, objects merge recursively, null removes a
// key. The merged blueprint is validated like a PUT body. Read and write are two calls, so two concurrent
// patches may lose one of them; use PUT with the full blueprint where that matters.
func (s *server) patchAgent(w http.ResponseWriter, r *http.Request) error {
	name, err := pathID(r, "name")
	if err != nil {
		return err
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	var patch any
	if err := decodeJSONNumbers(data, &patch); err != nil {
		return err
	}
	if _, ok := patch.(map[string]any); !ok {
		return badBody("a merge patch must be a JSON object")
	}
	cur, err := s.coord.GetAgent(r.Context(), name)
	if err != nil {
		return err
	}
	if cur.Blueprint == nil {
		return orchestrator.Errorf(orchestrator.ErrConflict, "agent_owned_by_runner",
			"agent %q belongs to runner %s and changes only when it registers again", name, cur.RunnerID)
	}
	curJSON, err := json.Marshal(cur.Blueprint)
	if err != nil {
		return err
	}
	var target any
	if err := decodeJSONNumbers(curJSON, &target); err != nil {
		return err
	}
	merged, err := json.Marshal(mergepatch.Apply(target, patch))
	if err != nil {
		return badBody("merge patch: %v", err)
	}
	var b orchestrator.Blueprint
	if err := decodeJSON(merged, &b, true); err != nil {
		return err
	}
	a, err := s.coord.UpdateAgent(r.Context(), name, &b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// decodeJSONNumbers decodes one JSON value keeping numbers as written (json.Number), so a merge does not
// round large integers in schemas through float64.
func decodeJSONNumbers(data []byte, v *any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return badBody("request body is required (a JSON value)")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badBody("invalid JSON: unexpected data after the first value (at byte %d)", dec.InputOffset())
	}
	return nil
}

func (s *server) deleteAgent(w http.ResponseWriter, r *http.Request) error {
	name, err := pathID(r, "name")
	if err != nil {
		return err
	}
	if err := s.coord.DeleteAgent(r.Context(), name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
