package orchestrator

import (
	"context"
	"errors"
	"strings"
)

// ListAgents lists agents ordered by name. Deterministic agents carry their parameters_schema inline (seed
// 001 §5); AI agents carry one only when they declare it (the implicit prompt schema is left out).
func (c *LocalCoordinator) ListAgents(ctx context.Context, p ListAgentsParams) ([]*AgentInfo, error) {
	for _, t := range p.Tags {
		if err := validateTag(t); err != nil {
			return nil, Errorf(ErrInvalid, "invalid_request", "%v", err)
		}
	}
	agents, err := c.store.ListAgents(ctx, AgentFilter{Type: p.Type, Tags: p.Tags})
	if err != nil {
		return nil, err
	}
	out := make([]*AgentInfo, 0, len(agents))
	for _, a := range agents {
		out = append(out, agentInfo(a, false))
	}
	return out, nil
}

// GetAgent returns one agent with both schemas; AI agents without a declared parameters schema show the
// implicit prompt schema. Registry agents also carry their full blueprint.
func (c *LocalCoordinator) GetAgent(ctx context.Context, name string) (*AgentInfo, error) {
	a, err := lookup(c.store.GetAgent(ctx, name)).as("agent", name)
	if err != nil {
		return nil, err
	}
	return agentInfo(a, true), nil
}

func agentInfo(a *Agent, full bool) *AgentInfo {
	b := a.Blueprint
	info := &AgentInfo{
		Name:             a.Name,
		Type:             b.Type,
		Description:      b.Description,
		Tags:             b.Tags,
		ParametersSchema: b.ParametersSchema,
		OutputSchema:     b.OutputSchema,
		AllowedEnv:       b.AllowedEnv,
		RunnerID:         a.RunnerID,
		Disabled:         b.Disabled,
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
func (c *LocalCoordinator) CreateAgent(ctx context.Context, b *Blueprint) (*AgentInfo, error) {
	b, err := c.checkRegistryBlueprint(b)
	if err != nil {
		return nil, err
	}
	now := Now()
	a := &Agent{Name: b.Name, Blueprint: b, CreatedAt: now, UpdatedAt: now}
	if err := c.store.CreateAgent(ctx, a); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, Errorf(ErrConflict, "agent_exists", "agent %q already exists", b.Name)
		}
		return nil, err
	}
	c.agentsChanged()
	c.log.Info("agent created", "agent", a.Name)
	return agentInfo(a, true), nil
}

// UpdateAgent replaces a registry agent's blueprint; the name in b must be empty or equal to name.
func (c *LocalCoordinator) UpdateAgent(ctx context.Context, name string, b *Blueprint) (*AgentInfo, error) {
	if b == nil {
		return nil, Errorf(ErrInvalid, "invalid_blueprint", "blueprint is required")
	}
	cp := *b
	if cp.Name == "" {
		cp.Name = name
	}
	if cp.Name != name {
		return nil, Errorf(ErrInvalid, "invalid_blueprint", "blueprint name %q does not match agent %q (names cannot change)", cp.Name, name)
	}
	nb, err := c.checkRegistryBlueprint(&cp)
	if err != nil {
		return nil, err
	}
	var out *Agent
	err = c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		a, err := lookup(tx.GetAgent(ctx, name)).as("agent", name)
		if err != nil {
			return err
		}
		if a.RunnerID != "" {
			return Errorf(ErrConflict, "agent_owned_by_runner", "agent %q belongs to runner %s and changes only when it registers again", name, a.RunnerID)
		}
		a.Blueprint = nb
		a.UpdatedAt = Now()
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
func (c *LocalCoordinator) DeleteAgent(ctx context.Context, name string) error {
	defer c.agentsChanged() // after the commit (or the failure: clearing is always safe)
	return c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		a, err := lookup(tx.GetAgent(ctx, name)).as("agent", name)
		if err != nil {
			return err
		}
		if a.RunnerID != "" {
			return Errorf(ErrConflict, "agent_owned_by_runner", "agent %q belongs to runner %s and goes away when the runner does", name, a.RunnerID)
		}
		return tx.DeleteAgent(ctx, name)
	})
}

func (c *LocalCoordinator) checkRegistryBlueprint(b *Blueprint) (*Blueprint, error) {
	if b == nil {
		return nil, Errorf(ErrInvalid, "invalid_blueprint", "blueprint is required")
	}
	cp := *b
	if cp.Type == "" {
		cp.Type = AgentTypeAgent
	}
	if cp.Type != AgentTypeAgent {
		return nil, Errorf(ErrInvalid, "invalid_blueprint",
			"the registry holds AI agents only; deterministic agents are announced by the runner that executes them")
	}
	if strings.Contains(cp.Name, "@") {
		return nil, Errorf(ErrInvalid, "invalid_blueprint", "name %q must not contain '@'", cp.Name)
	}
	if err := c.checkSchemaSizes(&cp); err != nil {
		return nil, err
	}
	if err := cp.Validate(); err != nil {
		return nil, err
	}
	return &cp, nil
}

func (c *LocalCoordinator) checkSchemaSizes(b *Blueprint) error {
	if len(b.ParametersSchema) > c.limits.MaxSchemaBytes || len(b.OutputSchema) > c.limits.MaxSchemaBytes {
		return Errorf(ErrTooLarge, "schema_too_large", "blueprint %q: a schema exceeds %d bytes", b.Name, c.limits.MaxSchemaBytes)
	}
	return nil
}

// PutAgents creates or replaces registry agents from blueprints — a coordinator's -agents-dir at start
// (see [LoadAgentBlueprints]). Agents not in the list are left alone. A name owned by a runner is an
// error; nothing is changed unless every blueprint is accepted.
func (c *LocalCoordinator) PutAgents(ctx context.Context, blueprints []*Blueprint) error {
	checked := make([]*Blueprint, 0, len(blueprints))
	for _, b := range blueprints {
		nb, err := c.checkRegistryBlueprint(b)
		if err != nil {
			return err
		}
		checked = append(checked, nb)
	}
	defer c.agentsChanged()
	return c.store.InTx(ctx, func(ctx context.Context, tx Store) error {
		now := Now()
		for _, b := range checked {
			a, err := tx.GetAgent(ctx, b.Name)
			switch {
			case errors.Is(err, ErrNotFound):
				if err := tx.CreateAgent(ctx, &Agent{Name: b.Name, Blueprint: b, CreatedAt: now, UpdatedAt: now}); err != nil {
					return err
				}
			case err != nil:
				return err
			case a.RunnerID != "":
				return Errorf(ErrConflict, "agent_owned_by_runner", "agent %q belongs to runner %s", b.Name, a.RunnerID)
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
