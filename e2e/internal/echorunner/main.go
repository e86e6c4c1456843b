// Command echorunner is the AI-agent runner of the end-to-end tests: an runner.Runner on an
// httpapi.Client (exactly what a remote runner is) with an in-process executor that plays an AI agent
// without any model. Every run's prompt (parameters.prompt) is appended to the -prompts file as one JSON
// line {run_id, session_id, mode, prompt}; the run emits an assistant message and then, by what the prompt
// says:
//
//	ECHO_BLOCK_UNTIL=<path>   waits until <path> exists (or the run is stopped)
//	ECHO_FAIL                 fails (the executor returns an error)
//	anything else             completes with result_text "echo: <prompt>"
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/runner"
)

func main() {
	coordURL := flag.String("coordinator", "http://127.0.0.1:8765", "coordinator base URL")
	token := flag.String("token", "", "runner bearer token")
	prompts := flag.String("prompts", "", "file to append every prompt to (JSON lines)")
	projectDir := flag.String("project-dir", "", "project directory to register")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, *coordURL, *token, *prompts, *projectDir); err != nil {
		log.Error("echorunner failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, coordURL, token, prompts, projectDir string) error {
	client, err := httpapi.NewClient(coordURL, httpapi.ClientConfig{Token: token, Logger: log})
	if err != nil {
		return err
	}
	accepts := true
	worker, err := runner.New(runner.Config{
		Coordinator:   client,
		Executor:      &echo{prompts: prompts},
		ProjectDir:    projectDir,
		ExecutorType:  "echo",
		AcceptsAgents: &accepts,
		MaxConcurrent: 8,
		ShutdownGrace: time.Second,
		Logger:        log,
	})
	if err != nil {
		return err
	}
	log.Info("echorunner starting", "coordinator", coordURL)
	return worker.Run(ctx)
}

type echo struct {
	prompts string
	mu      sync.Mutex
}

func (e *echo) Execute(ctx context.Context, inv *orchestrator.Invocation, events orchestrator.EventSink) (*orchestrator.Result, error) {
	var p struct {
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal(inv.Parameters, &p); err != nil {
		return nil, err
	}
	if err := e.record(inv, p.Prompt); err != nil {
		return nil, err
	}
	reply := "echo: " + p.Prompt
	msg := orchestrator.NewEvent(orchestrator.EventMessage, map[string]any{
		"role":    "assistant",
		"content": []map[string]string{{"type": "text", "text": reply}},
	})
	if err := events.Emit(ctx, msg); err != nil {
		return nil, err
	}
	if path, ok := directive(p.Prompt, "ECHO_BLOCK_UNTIL="); ok {
		for {
			if _, err := os.Stat(path); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return &orchestrator.Result{ResultType: "agent", ResultText: reply, Error: "stopped"}, nil
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if strings.Contains(p.Prompt, "ECHO_FAIL") {
		return nil, errors.New("echo: the prompt asked to fail")
	}
	return &orchestrator.Result{ResultType: "agent", ResultText: reply}, nil
}

// record appends the prompt before anything else happens, so a test that sees it knows the run started.
func (e *echo) record(inv *orchestrator.Invocation, prompt string) error {
	if e.prompts == "" {
		return nil
	}
	line, err := json.Marshal(map[string]string{
		"run_id": inv.RunID, "session_id": inv.SessionID, "mode": string(inv.Mode), "prompt": prompt,
	})
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := os.OpenFile(e.prompts, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// directive returns the word that follows key in the prompt.
func directive(prompt, key string) (string, bool) {
	i := strings.Index(prompt, key)
	if i < 0 {
		return "", false
	}
	rest := prompt[i+len(key):]
	if j := strings.IndexAny(rest, " \t\r\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest, rest != ""
}
