package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// runManyBatch is the number of sessions ao run --jsonl starts per request: the HTTP API's default
// batch limit.
const runManyBatch = 1000

// jsonlRun is one line of ao run --jsonl: its parameters, and where it was in the file.
type jsonlRun struct {
	line   int
	params json.RawMessage
}

// runMany is ao run --jsonl: every line is checked and typed first, then the sessions are started in
// batches (each all or none), and their ids printed in the order of the file.
func (e *env) runMany(ctx context.Context, agent string, f runFlags) error {
	if f.params != "" || f.async || f.stopOnInterrupt || f.idempotencyKey != "" {
		return usageErrorf("--jsonl takes each run's parameters from its lines, does not follow them, and starts each batch all or none: drop --params, --async, --stop-on-interrupt and --idempotency-key")
	}
	var r io.Reader = e.app.Stdin
	if f.jsonl != "-" {
		file, err := os.Open(f.jsonl)
		if err != nil {
			return usageErrorf("--jsonl: %v", err)
		}
		defer file.Close()
		r = file
	}
	coord, err := e.connect()
	if err != nil {
		return err
	}
	bs, ok := coord.(orchestrator.BatchStarter)
	if !ok {
		return errors.New("this coordinator starts runs one at a time; it cannot take --jsonl")
	}
	paramSchema, err := pairsSchema(ctx, coord, agent, f.pairs)
	if err != nil {
		return err
	}
	runs, err := readJSONL(r, f.jsonl, func(line []byte) (json.RawMessage, error) {
		return buildParams(paramSchema, line, f.pairs)
	})
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return usageErrorf("--jsonl %s holds no runs", f.jsonl)
	}
	for start := 0; start < len(runs); start += runManyBatch {
		chunk := runs[start:min(start+runManyBatch, len(runs))]
		ps := make([]orchestrator.StartRunParams, len(chunk))
		for i, run := range chunk {
			ps[i] = orchestrator.StartRunParams{AgentName: agent, Parameters: run.params, Prompt: f.prompt}
			if err := f.submission(&ps[i]); err != nil {
				return err
			}
		}
		res, err := bs.StartRuns(ctx, ps)
		if err != nil {
			if start > 0 {
				fmt.Fprintf(e.app.Stderr, "ao: the sessions of lines before line %d were started (their ids are above)\n", chunk[0].line)
			}
			return batchLines(err, chunk)
		}
		for i, r := range res {
			if e.json {
				writeJSON(e.app.Stdout, map[string]any{"line": chunk[i].line, "session_id": r.SessionID, "run_id": r.RunID, "status": r.Status})
			} else {
				fmt.Fprintln(e.app.Stdout, r.SessionID)
			}
		}
	}
	if !e.json {
		fmt.Fprintf(e.app.Stderr, "ao: %d sessions of %s started; follow one with: ao logs -f SESSION\n", len(runs), agent)
	}
	return nil
}

// readJSONL reads the runs of a JSON Lines file: one JSON object per line, blank lines skipped. build
// turns a line into the run's parameters.
func readJSONL(r io.Reader, name string, build func([]byte) (json.RawMessage, error)) ([]jsonlRun, error) {
	var runs []jsonlRun
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' || !json.Valid(line) {
			return nil, usageErrorf("--jsonl %s, line %d: not a JSON object", name, n)
		}
		params, err := build(bytes.Clone(line))
		if err != nil {
			return nil, usageErrorf("--jsonl %s, line %d: %v", name, n, err)
		}
		runs = append(runs, jsonlRun{line: n, params: params})
	}
	if err := sc.Err(); err != nil {
		return nil, usageErrorf("--jsonl %s: %v", name, err)
	}
	return runs, nil
}

// batchLines turns a refused batch's errors, which name runs by index, into one that names the lines.
func batchLines(err error, chunk []jsonlRun) error {
	var oe *orchestrator.Error
	if !errors.As(err, &oe) || oe.Code != "invalid_runs" {
		return err
	}
	items, _ := oe.Details["items"].([]any)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s:", oe.Message)
	for _, it := range items {
		m, _ := it.(map[string]any)
		idx, _ := m["index"].(float64)
		if i, ok := m["index"].(int); ok {
			idx = float64(i)
		}
		line := 0
		if int(idx) >= 0 && int(idx) < len(chunk) {
			line = chunk[int(idx)].line
		}
		fmt.Fprintf(&b, "\n  line %d: %v", line, m["message"])
		if errs, ok := m["validation_errors"].([]any); ok {
			for _, fe := range errs {
				if fm, ok := fe.(map[string]any); ok {
					fmt.Fprintf(&b, "\n    %v: %v", fm["path"], fm["message"])
				}
			}
		}
	}
	return &usageError{msg: b.String()}
}
