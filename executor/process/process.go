// Package process is the executor for external executables: programs in any language that speak the
// orchestrator's stdin protocol (docs/executors.md). The protocol is specified in
// docs/executor-protocol.md; in short:
//
//   - For each run the runner starts the configured program (directly, never through a shell, leading its
//     own process group, in the run's project directory) and writes one JSON document, [Input], to its
//     stdin, which it then closes.
//   - The environment is the runner's own, without its credentials ([Config].Isolation), plus
//     AGENT_SESSION_ID, AGENT_RUN_ID, AGENT_ORCHESTRATOR_API_URL and AGENT_ORCHESTRATOR_TOKEN (the runner's
//     gateway and the run's token, when the runner has a gateway) and AGENT_RESULT_FILE. With
//     [Config].Isolation.User the program runs as that user, who owns the result file's directory.
//   - The program posts its events — messages, progress, tool calls, an executor_session event that makes
//     the session resumable, a result event — to the gateway (POST {gateway_url}/sessions/{session_id}/events
//     with the token as a bearer token) while it works, and exits: status 0 completes the run, any other
//     fails it. Every stderr line becomes a stderr event; stdout is logged at debug level and otherwise
//     ignored.
//   - The result is the newest result event the run posted, else its last assistant message (the
//     coordinator derives it when the executor reports none). A program may instead write its result,
//     as JSON, to the file named by AGENT_RESULT_FILE (also in [Input].ResultFile); that file, when it
//     exists, is the run's result and is checked against the output schema.
//   - Stopping the run sends SIGTERM to the program's process group, then SIGKILL after
//     [Config].StopGrace; so does the blueprint's timeout_seconds, when set, expiring. Should the process
//     running the executor be killed outright, its watchdog (started by [New]) does the same.
//
// # Results
//
// Execute returns a nil Result (and a nil error) when the program exited with status 0 and wrote no
// result file: the run is then completed and the coordinator takes the session's result from the events
// the program posted. Every other outcome is a Result: the result file's content, with ExitCode set; on a
// non-zero exit a failed Result whose Error is the last stderr lines (or "exit code N"); on a stop Error
// "stopped" and ExitCode -1 ("timed out after …" on a timeout).
package process

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/executor/internal/outputcheck"
	"github.com/agentorchestrator/orchestrator/executor/internal/proc"
	"github.com/agentorchestrator/orchestrator/executor/internal/watchdog"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
	"github.com/agentorchestrator/orchestrator/internal/schemacache"
)

// SchemaVersion is the version of the stdin protocol this package speaks ([Input].SchemaVersion).
const SchemaVersion = "2.2"

// EnvResultFile names the file a program may write its result to (see [ResultFile]).
const EnvResultFile = "AGENT_RESULT_FILE"

// Defaults of [Config].
const (
	DefaultStopGrace      = 5 * time.Second
	DefaultMaxStderrLine  = 16 << 10
	DefaultMaxResultBytes = 8 << 20
)

// maxStdoutLogLine bounds how much of one stdout line is logged.
const maxStdoutLogLine = 1024

// Config configures an [Executor].
type Config struct {
	// Path is the program to run for every run: a name looked up in PATH, or a path (a relative path is
	// relative to the runner's working directory, not the run's). Required.
	Path string
	// Args are passed to the program after its name.
	Args []string
	// Config is the runner's executor configuration: it is the base of [Input].ExecutorConfig, which the
	// blueprint's executor_config overrides key by key.
	Config map[string]any
	// StopGrace is how long a stopped program has between SIGTERM and SIGKILL. Zero or negative means
	// DefaultStopGrace (5s).
	StopGrace time.Duration
	// MaxStderrLine caps the length in bytes of one stderr line in an event; the rest of a longer line is
	// dropped, and the event says how much ("truncated": true). Zero means DefaultMaxStderrLine (16 KiB);
	// values below 64 are raised to 64, values above 64 KiB lowered to 64 KiB, so that one event stays far
	// below the coordinator's limit for an event. Lines a program writes faster than its session records
	// them are counted in a stderr_dropped event rather than held without bound.
	MaxStderrLine int
	// MaxResultBytes caps the size of the result file. Zero or negative means DefaultMaxResultBytes (8 MiB,
	// the coordinator's default result limit).
	MaxResultBytes int64
	// Isolation keeps programs from the runner: the runner's credentials are not inherited and, with
	// Isolation.User, programs run as another user, who is given the run's result file (see
	// executor/isolation). The zero value hides the orchestrator's token variables.
	Isolation isolation.Config
	// Logger receives the executor's diagnostics and the programs' stdout, at debug level. Nil discards
	// them.
	Logger *slog.Logger
}

// Executor runs an external program for each run. It implements [orchestrator.Executor] and is safe for
// concurrent use.
type Executor struct {
	cfg     Config
	schemas *schemacache.Cache
}

var _ orchestrator.Executor = (*Executor)(nil)

// New returns an executor with cfg, its zero fields set to their defaults. A relative Path with a slash is
// made absolute now, against the current working directory.
func New(cfg Config) *Executor {
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = DefaultMaxResultBytes
	}
	proc.SetDefaults(&cfg.StopGrace, &cfg.MaxStderrLine, &cfg.Logger)
	watchdog.Watch(cfg.Logger) // the programs die with this process, however it dies; leftovers of a dead one too
	if strings.Contains(cfg.Path, "/") && !filepath.IsAbs(cfg.Path) {
		if abs, err := filepath.Abs(cfg.Path); err == nil {
			cfg.Path = abs
		}
	}
	return &Executor{cfg: cfg, schemas: schemacache.New(64)}
}

// Input is the JSON document a program reads on stdin: the invocation, schema version "2.2" (2.1 plus
// run_id, prompt, executor_session_id, output_schema and result_file).
type Input struct {
	SchemaVersion string `json:"schema_version"`
	// Mode is "start" or "resume".
	Mode      string `json:"mode"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	AgentName string `json:"agent_name"`
	// Parameters are validated against the agent's parameters_schema, defaults applied; for a resume, the
	// new input ({"prompt": …}). Always an object.
	Parameters json.RawMessage `json:"parameters"`
	// Prompt is parameters.prompt when it is a string, for convenience.
	Prompt string `json:"prompt,omitempty"`
	// Command is the blueprint's command (deterministic agents).
	Command        string                  `json:"command,omitempty"`
	ProjectDir     string                  `json:"project_dir,omitempty"`
	AgentBlueprint *orchestrator.Blueprint `json:"agent_blueprint,omitempty"`
	// ExecutorConfig is the runner's executor configuration overridden by the blueprint's executor_config.
	ExecutorConfig map[string]any `json:"executor_config,omitempty"`
	// ExecutorSessionID is the program's own session id, from the executor_session event of an earlier
	// run of the session (on a resume).
	ExecutorSessionID string `json:"executor_session_id,omitempty"`
	// OutputSchema, when set, is the JSON Schema the result's result_data must match.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// GatewayURL is the runner's gateway (AGENT_ORCHESTRATOR_API_URL); empty when the runner has none.
	GatewayURL string          `json:"gateway_url,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	// ResultFile is where the program may write its result (the same as $AGENT_RESULT_FILE).
	ResultFile string `json:"result_file"`
}

// ResultFile is the content of the result file: the fields of [orchestrator.Result] a program sets, plus
// the executor session id (which spares a program without a gateway the executor_session event). Unknown
// fields are ignored.
type ResultFile struct {
	ResultType string          `json:"result_type,omitempty"`
	ResultText string          `json:"result_text"`
	ResultData json.RawMessage `json:"result_data,omitempty"`
	// Error, when set, fails the run whatever the exit status.
	Error             string `json:"error,omitempty"`
	ExecutorSessionID string `json:"executor_session_id,omitempty"`
}

// Execute runs the program for inv; see the package documentation. It returns an error, and starts
// nothing, when inv has no blueprint, its output schema is malformed, or the program cannot be found or
// started.
func (e *Executor) Execute(ctx context.Context, inv *orchestrator.Invocation, events orchestrator.EventSink) (*orchestrator.Result, error) {
	if inv == nil || inv.Blueprint == nil {
		return nil, orchestrator.Errorf(orchestrator.ErrInvalid, "invalid_invocation", "invocation has no blueprint")
	}
	if e.cfg.Path == "" {
		return nil, errors.New("process: Config.Path is empty")
	}
	if events == nil {
		events = orchestrator.DiscardEvents
	}
	schema, err := e.schemas.CompileOutput(inv.OutputSchema)
	if err != nil {
		return nil, err
	}
	resultType := string(inv.Blueprint.Type)
	if resultType == "" {
		resultType = string(orchestrator.AgentTypeAgent)
	}
	if ctx.Err() != nil {
		return &orchestrator.Result{ResultType: resultType, ExitCode: intPtr(-1), Error: "stopped"}, nil
	}

	dir, err := os.MkdirTemp("", "ao-process-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// The program writes its result file into dir: a program running as another user needs it as its own.
	if err := proc.GiveTo(e.cfg.Isolation.User, dir); err != nil {
		return nil, err
	}
	resultPath := filepath.Join(dir, "result.json")
	env := proc.Environ(e.cfg.Isolation, inv.Env, map[string]string{EnvResultFile: resultPath})
	path, err := proc.LookPath(e.cfg.Path, proc.Lookup(env, "PATH"))
	if err != nil {
		return nil, err
	}
	stdin, err := json.Marshal(e.input(inv, resultPath))
	if err != nil {
		return nil, fmt.Errorf("process: encode the invocation: %w", err)
	}

	log := e.cfg.Logger.With("session_id", inv.SessionID, "run_id", inv.RunID, "agent", inv.AgentName)
	pump := proc.NewStderrPump(inv.SessionID, e.cfg.MaxStderrLine, log)
	pump.Start(ctx, events)
	exit, err := proc.Run(ctx, proc.Spec{
		Path:      path,
		Args:      append([]string{e.cfg.Path}, e.cfg.Args...),
		Env:       env,
		Dir:       inv.ProjectDir,
		Stdin:     append(stdin, '\n'),
		Stdout:    func(r io.Reader) { logLines(r, log) },
		Stderr:    pump.Read,
		Timeout:   inv.Blueprint.Timeout(),
		StopGrace: e.cfg.StopGrace,
		User:      e.cfg.Isolation.User,
		Logger:    log,
	})
	pump.Finish()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", e.cfg.Path, err)
	}

	file, fileErr := e.readResult(resultPath, e.cfg.Isolation.User)
	if file != nil && file.ExecutorSessionID != "" {
		ev := orchestrator.NewEvent(orchestrator.EventExecutorSession, map[string]string{"executor_session_id": file.ExecutorSessionID})
		ev.SessionID, ev.Time = inv.SessionID, time.Now().UTC()
		if err := events.Emit(context.WithoutCancel(ctx), ev); err != nil {
			log.Warn("emit executor_session event", "error", err)
		}
	}
	code := exit.Code()
	if exit.End == proc.Exited && code == 0 && file == nil && fileErr == nil {
		log.Debug("external executor ended; the result is in its events")
		return nil, nil
	}
	res := &orchestrator.Result{ResultType: resultType}
	if file != nil {
		res.ResultText, res.ResultData, res.Error = file.ResultText, file.ResultData, file.Error
		if file.ResultType != "" {
			res.ResultType = file.ResultType
		}
	}
	switch {
	case exit.End == proc.Stopped:
		res.Error = "stopped"
	case exit.End == proc.TimedOut:
		res.Error = "timed out after " + inv.Blueprint.Timeout().String()
	case code != 0:
		if res.Error == "" {
			if res.Error = pump.ErrorTail(); res.Error == "" {
				res.Error = exit.Description()
			}
		}
	case fileErr != nil:
		res.Error = fileErr.Error()
	case res.Error == "":
		outputcheck.Apply(res, schema, "result_data")
	}
	res.ExitCode = &code
	log.Debug("external executor ended", "exit_code", code, "error", res.Error)
	return res, nil
}

func (e *Executor) input(inv *orchestrator.Invocation, resultPath string) *Input {
	params := bytes.TrimSpace(inv.Parameters)
	if len(params) == 0 || string(params) == "null" {
		params = []byte("{}")
	}
	var prompt struct {
		Prompt any `json:"prompt"`
	}
	_ = json.Unmarshal(params, &prompt)
	p, _ := prompt.Prompt.(string)
	mode := string(inv.Mode)
	if mode == "" {
		mode = string(orchestrator.RunTypeStart)
	}
	config := maps.Clone(e.cfg.Config)
	if len(inv.Blueprint.ExecutorConfig) > 0 {
		if config == nil {
			config = map[string]any{}
		}
		maps.Copy(config, inv.Blueprint.ExecutorConfig)
	}
	return &Input{
		SchemaVersion:     SchemaVersion,
		Mode:              mode,
		SessionID:         inv.SessionID,
		RunID:             inv.RunID,
		AgentName:         inv.AgentName,
		Parameters:        json.RawMessage(params),
		Prompt:            p,
		Command:           inv.Blueprint.Command,
		ProjectDir:        inv.ProjectDir,
		AgentBlueprint:    inv.Blueprint,
		ExecutorConfig:    config,
		ExecutorSessionID: inv.ExecutorSessionID,
		OutputSchema:      nonNull(inv.OutputSchema),
		GatewayURL:        inv.Env[orchestrator.EnvAPIURL],
		Metadata:          nonNull(inv.Metadata),
		ResultFile:        resultPath,
	}
}

// readResult reads the result file: nil, nil when the program wrote none. The program chose what is at
// path: a symbolic link or anything but a regular file (of the program's user) is refused.
func (e *Executor) readResult(path string, u *isolation.User) (*ResultFile, error) {
	f, err := proc.OpenOutput(path, u)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("result file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, e.cfg.MaxResultBytes+1))
	if err != nil {
		return nil, fmt.Errorf("result file: %w", err)
	}
	if int64(len(data)) > e.cfg.MaxResultBytes {
		return nil, fmt.Errorf("result file: larger than %d bytes", e.cfg.MaxResultBytes)
	}
	var rf ResultFile
	if err := json.Unmarshal(data, &rf); err != nil {
		return nil, fmt.Errorf("result file: not a JSON object with the result's fields: %v", err)
	}
	rf.ResultData = nonNull(rf.ResultData)
	return &rf, nil
}

// logLines logs each stdout line at debug level, cut at maxStdoutLogLine.
func logLines(r io.Reader, log *slog.Logger) {
	br := bufio.NewReaderSize(r, maxStdoutLogLine)
	for {
		line, err := br.ReadSlice('\n')
		cut := errors.Is(err, bufio.ErrBufferFull)
		if len(line) > 0 {
			log.Debug("external executor stdout", "line", strings.TrimRight(string(line), "\r\n"), "cut", cut)
		}
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		if err != nil {
			return
		}
	}
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return raw
}

func intPtr(i int) *int { return &i }
