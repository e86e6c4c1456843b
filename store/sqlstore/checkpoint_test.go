package sqlstore_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/internal/testkit"
	"github.com/agentorchestrator/orchestrator/store/sqlstore"
)

// walRestarts reads the checkpoint sequence number of a WAL's header, which SQLite raises each time it
// starts the WAL over.
func walRestarts(t *testing.T, path string) uint32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var header [32]byte
	if _, err := f.ReadAt(header[:], 0); err != nil {
		t.Fatalf("read the WAL header: %v", err)
	}
	return binary.BigEndian.Uint32(header[12:16])
}

// Under writes that never pause, the background checkpoints alone never let SQLite start the WAL over;
// past MaxWALBytes the writer finishes a checkpoint itself and the WAL starts over again and again.
func TestWALStartsOverUnderSustainedWrites(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "wal.db")
	s, err := sqlstore.New(context.Background(), path, &sqlstore.Config{MaxWALBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	wrote := make(chan error, 1)
	go func() {
		var err error
		for i := 0; ctx.Err() == nil && err == nil; i++ {
			now := time.Now().UTC().Truncate(time.Microsecond)
			err = s.CreateSession(ctx, &orchestrator.Session{ID: fmt.Sprintf("ses_%08d", i), AgentName: "a",
				AgentType: orchestrator.AgentTypeDeterministic, Status: orchestrator.SessionPending,
				Parameters: []byte(`{"padding":"` + fmt.Sprintf("%0500d", i) + `"}`), CreatedAt: now, UpdatedAt: now})
		}
		if ctx.Err() != nil {
			err = nil
		}
		wrote <- err
	}()

	first := walRestarts(t, path+"-wal")
	testkit.WaitForState(t, 30*time.Second, "the WAL to start over 3 times under writes", func() (bool, string) {
		select {
		case err := <-wrote:
			t.Fatalf("writes stopped: %v", err)
		default:
		}
		n := walRestarts(t, path+"-wal") - first
		return n >= 3, fmt.Sprintf("%d restarts", n)
	})
	stop()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}
