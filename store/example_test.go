package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/store"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// InTx makes several writes one: everything done through tx is committed together, or, when fn returns
// an error, nothing is. Inside fn only tx may be used.
func ExampleStore_InTx() {
	ctx := context.Background()
	db, err := sqlstore.New(ctx, ":memory:", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	var st store.Store = db // what the coordinator sees

	now := time.Now().UTC()
	agent := func(name string) *store.Agent {
		return &store.Agent{Name: name, CreatedAt: now, UpdatedAt: now,
			Blueprint: &orchestrator.Blueprint{Name: name, Type: orchestrator.AgentTypeAgent}}
	}
	errChanged := errors.New("changed my mind")
	err = st.InTx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := tx.CreateAgent(ctx, agent("planner")); err != nil {
			return err
		}
		return errChanged // rolls the agent back
	})
	fmt.Println("InTx:", err)
	_, err = st.GetAgent(ctx, "planner")
	fmt.Println("planner:", errors.Is(err, orchestrator.ErrNotFound))

	err = st.InTx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := tx.CreateAgent(ctx, agent("planner")); err != nil {
			return err
		}
		return tx.CreateAgent(ctx, agent("reviewer"))
	})
	if err != nil {
		log.Fatal(err)
	}
	agents, err := st.ListAgents(ctx, store.AgentFilter{})
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range agents {
		fmt.Println("agent:", a.Name, a.Type())
	}
	// A taken name is ErrConflict, whatever the implementation.
	fmt.Println("again:", errors.Is(st.CreateAgent(ctx, agent("planner")), orchestrator.ErrConflict))
	// Output:
	// InTx: changed my mind
	// planner: true
	// agent: planner agent
	// agent: reviewer agent
	// again: true
}
