package coordinator

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/tags"
	"github.com/agentorchestrator/orchestrator/store"
)

// ListAgents lists agents ordered by name. Deterministic agents carry their parameters_schema inline, so a
// caller sees what to send without a second request; AI agents carry one only when they declare it (the implicit prompt schema is left out).
func (c *Coordinator) ListAgents(ctx context.Context, p orchestrator.ListAgentsParams) ([]*orchestrator.AgentInfo, error) {
	for _, t := range p.Tags {
		if err := tags.Validate(t); err != nil {
			return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_request", "%v", err)
		}
	}
	agents, err := c.store.ListAgents(ctx, store.AgentFilter{Type: p.Type, Tags: p.Tags})
	if err != nil {
		return nil, err
	}
	out := make([]*orchestrator.AgentInfo, 0, len(agents))
	for _, a := range agents {
		out = append(out, agentInfo(a, false))
	}
	return out, nil
}

// GetAgent returns one agent with both schemas; AI agents without a declared parameters schema show the
// implicit prompt schema. Registry agents also carry their full blueprint.
func (c *Coordinator) GetAgent(ctx context.Context, name string) (*orchestrator.AgentInfo, error) {
	a, err := lookup(c.store.GetAgent(ctx, name)).as("agent", name)
	if err != nil {
		return nil, err
	}
	return agentInfo(a, true), nil
}

func agentInfo(a *store.Agent, full bool) *orchestrator.AgentInfo {
	b := a.Blueprint
	info := &orchestrator.AgentInfo{
		Name:             a.Name,
		Type:             b.Type,
		Description:      b.Description,
		Tags:             b.Tags,
		ParametersSchema: b.ParametersSchema,
		OutputSchema:     b.OutputSchema,
		AllowedEnv:       b.AllowedEnv,
		RunnerID:         a.RunnerID,
		Disabled:         b.Disabled,
		Cache:            b.Cache,
		RateLimit:        b.RateLimit,
	}
	if full {
		info.ParametersSchema = b.EffectiveParametersSchema()
		if a.RunnerID == "" {
			info.Blueprint = b
		}
	}
	return info
}

// CreateAgent adds an AI agent to the registry. Deterministic agents cannot be created here: they belong
// to the runner that can execute them and arrive with its registration.
func (c *Coordinator) CreateAgent(ctx context.Context, b *orchestrator.Blueprint) (*orchestrator.AgentInfo, error) {
	b, err := c.checkRegistryBlueprint(b)
	if err != nil {
		return nil, err
	}
	now := c.now()
	a := &store.Agent{Name: b.Name, Blueprint: b, CreatedAt: now, UpdatedAt: now}
	if err := c.store.CreateAgent(ctx, a); err != nil {
		if errors.Is(err, orchestrator.ErrConflict) {
			return nil, orchestrator.Errorf(orchestrator.ErrConflict, "agent_exists", "agent %q already exists", b.Name)
		}
		return nil, err
	}
	c.agentsChanged()
	c.log.Info("agent created", "agent", a.Name)
	return agentInfo(a, true), nil
}

// UpdateAgent replaces a registry agent's blueprint; the name in b must be empty or equal to name.
func (c *Coordinator) UpdateAgent(ctx context.Context, name string, b *orchestrator.Blueprint) (*orchestrator.AgentInfo, error) {
	if b == nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_blueprint", "blueprint is required")
	}
	cp := *b
	if cp.Name == "" {
		cp.Name = name
	}
	if cp.Name != name {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_blueprint", "blueprint name %q does not match agent %q (names cannot change)", cp.Name, name)
	}
	nb, err := c.checkRegistryBlueprint(&cp)
	if err != nil {
		return nil, err
	}
	var out *store.Agent
	err = c.inTx(ctx, opAgents, func(ctx context.Context, tx store.Store) error {
		a, err := lookup(tx.GetAgent(ctx, name)).as("agent", name)
		if err != nil {
			return err
		}
		if a.RunnerID != "" {
			return orchestrator.Errorf(orchestrator.ErrConflict, "agent_owned_by_runner", "agent %q belongs to runner %s and changes only when it registers again", name, a.RunnerID)
		}
		a.Blueprint = nb
		a.UpdatedAt = c.now()
		out = a
		return tx.UpdateAgent(ctx, a)
	})
	if err != nil {
		return nil, err
	}
	c.agentsChanged()
	return agentInfo(out, true), nil
}

// DeleteAgent removes a registry agent. Sessions it already started are not affected.
func (c *Coordinator) DeleteAgent(ctx context.Context, name string) error {
	defer c.agentsChanged() // after the commit (or the failure: clearing is always safe)
	return c.inTx(ctx, opAgents, func(ctx context.Context, tx store.Store) error {
		a, err := lookup(tx.GetAgent(ctx, name)).as("agent", name)
		if err != nil {
			return err
		}
		if a.RunnerID != "" {
			return orchestrator.Errorf(orchestrator.ErrConflict, "agent_owned_by_runner", "agent %q belongs to runner %s and goes away when the runner does", name, a.RunnerID)
		}
		return tx.DeleteAgent(ctx, name)
	})
}

func (c *Coordinator) checkRegistryBlueprint(b *orchestrator.Blueprint) (*orchestrator.Blueprint, error) {
	if b == nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_blueprint", "blueprint is required")
	}
	cp := *b
	if cp.Type == "" {
		cp.Type = orchestrator.AgentTypeAgent
	}
	if cp.Type != orchestrator.AgentTypeAgent {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_blueprint",
			"the registry holds AI agents only; deterministic agents are announced by the runner that executes them")
	}
	if strings.Contains(cp.Name, "@") {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_blueprint", "name %q must not contain '@'", cp.Name)
	}
	if err := c.checkSchemaSizes(&cp); err != nil {
		return nil, err
	}
	if err := cp.Validate(); err != nil {
		return nil, err
	}
	return &cp, nil
}

func (c *Coordinator) checkSchemaSizes(b *orchestrator.Blueprint) error {
	if len(b.ParametersSchema) > c.limits.MaxSchemaBytes || len(b.OutputSchema) > c.limits.MaxSchemaBytes {
		return orchestrator.Errorf(orchestrator.ErrTooLarge, "schema_too_large", "blueprint %q: a schema exceeds %d bytes", b.Name, c.limits.MaxSchemaBytes)
	}
	return nil
}

// PutAgents creates or replaces registry agents from blueprints — a coordinator's -agents-dir at start (see
// [orchestrator.LoadBlueprints]). Agents not in the list are left alone. A name owned by a runner is an
// error; nothing is changed unless every blueprint is accepted.
func (c *Coordinator) PutAgents(ctx context.Context, blueprints []*orchestrator.Blueprint) error {
	checked := make([]*orchestrator.Blueprint, 0, len(blueprints))
	for _, b := range blueprints {
		nb, err := c.checkRegistryBlueprint(b)
		if err != nil {
			return err
		}
		checked = append(checked, nb)
	}
	defer c.agentsChanged()
	return c.inTx(ctx, opAgents, func(ctx context.Context, tx store.Store) error {
		now := c.now()
		for _, b := range checked {
			a, err := tx.GetAgent(ctx, b.Name)
			switch {
			case errors.Is(err, orchestrator.ErrNotFound):
				if err := tx.CreateAgent(ctx, &store.Agent{Name: b.Name, Blueprint: b, CreatedAt: now, UpdatedAt: now}); err != nil {
					return err
				}
			case err != nil:
				return err
			case a.RunnerID != "":
				return orchestrator.Errorf(orchestrator.ErrConflict, "agent_owned_by_runner", "agent %q belongs to runner %s", b.Name, a.RunnerID)
			default:
				a.Blueprint, a.UpdatedAt = b, now
				if err := tx.UpdateAgent(ctx, a); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// agentsKey is the wake-up key published after an agent write, so that other replicas drop their
// cached agents.
const agentsKey = "agents"

// agentCacheMax bounds the agents cached at once.
const agentCacheMax = 4096

// startAgent returns the agent a run is started for, from the agent cache when it holds it, so that
// starting a run does not read the agents table every time (a read per run was about 5% of a run's CPU
// over HTTP). The agent is shared: callers must not change it.
//
// The cache never serves an agent that a write through this coordinator has changed or removed: every
// such write clears it once committed (agentsChanged). A write through another replica clears it when
// that replica's wake-up arrives through the Notifier (milliseconds later; the same race as a lookup made
// just before the write). AgentCacheTTL bounds what a lost wake-up, or a write straight to the store, can
// leave behind. Only agents that exist are cached, so a new agent is found at once.
func (c *Coordinator) startAgent(ctx context.Context, name string) (*store.Agent, error) {
	if c.agents == nil {
		return lookup(c.store.GetAgent(ctx, name)).as("agent", name)
	}
	now := time.Now()
	a, ok, gen := c.agents.Get(name, now)
	if ok {
		return a, nil
	}
	a, err := lookup(c.store.GetAgent(ctx, name)).as("agent", name)
	if err == nil {
		c.agents.Put(name, a, gen, now)
	}
	return a, err
}

// agentsChanged is called after an agent write committed: it clears this coordinator's cache and, through
// the Notifier, the other replicas' — also when this one caches nothing, since they may.
func (c *Coordinator) agentsChanged() {
	c.agents.Clear()
	if c.cfg.Notifier != nil {
		c.cfg.Notifier.Notify(agentsKey)
	}
}
