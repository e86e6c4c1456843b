package service_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentorchestrator/orchestrator/service"
)

func TestLogConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		wantErr bool
		json    bool
		debug   bool
	}{
		{args: nil},
		{args: []string{"-log-format", "json"}, json: true},
		{args: []string{"-log-level", "debug"}, debug: true},
		{args: []string{"-log-format", "xml"}, wantErr: true},
		{args: []string{"-log-level", "loud"}, wantErr: true},
	} {
		var cfg service.LogConfig
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.RegisterFlags(fs)
		err := fs.Parse(tc.args)
		if (err != nil) != tc.wantErr {
			t.Errorf("%v: parse error %v, want error %v", tc.args, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		var buf bytes.Buffer
		log := cfg.New(&buf)
		log.Info("hello", "k", 1)
		if json.Valid(bytes.TrimSpace(buf.Bytes())) != tc.json {
			t.Errorf("%v: output %q, want JSON %v", tc.args, buf.String(), tc.json)
		}
		if log.Enabled(t.Context(), slog.LevelDebug) != tc.debug {
			t.Errorf("%v: debug enabled = %v, want %v", tc.args, !tc.debug, tc.debug)
		}
	}
}

// RunnerConfig.Check refuses what would make every run fail later, naming the flag and the value.
func TestRunnerCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty, bps, file := filepath.Join(dir, "empty"), filepath.Join(dir, "bps"), filepath.Join(dir, "file")
	for _, d := range []string{empty, bps} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bps, "a.json"), []byte(`{"name": "a", "command": "true"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"-blueprints-dir", bps, "-project-dir", dir}
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{nil, ""},
		{[]string{"-project-dir", filepath.Join(dir, "missing")}, "-project-dir " + filepath.Join(dir, "missing")},
		{[]string{"-project-dir", file}, "-project-dir " + file + " is not a directory"},
		{[]string{"-executor", "bogus"}, "-executor bogus"},
		{[]string{"-executor", "claude-code", "-claude", "false"}, "-claude false: `false --version` failed"},
		{[]string{"-blueprints-dir", empty}, "-blueprints-dir " + empty + " holds no blueprint"},
		{[]string{"-executor", "claude-code", "-claude", "true"}, ""}, // an AI runner needs no blueprint
		{[]string{"-token", "x", "-token-file", file}, "give -token or -token-file, not both"},
		{[]string{"-executor", "true", "-executor-config", "[1]"}, "-executor-config must be a JSON object"},
	} {
		var cfg service.RunnerConfig
		fs := flag.NewFlagSet("runner", flag.ContinueOnError)
		cfg.RegisterFlags(fs)
		if err := fs.Parse(append(append([]string{}, base...), tc.args...)); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		_, err := cfg.Check(t.Context(), slog.New(slog.DiscardHandler))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v, want no error", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// The coordinator's start-up checks refuse an -allowed-origins or -allowed-hosts entry that could never
// match, naming the flags, before a database is opened; the allowed hosts reach the API.
func TestCoordinatorAllowedOriginsAndHosts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{[]string{"-allowed-origins", "orchestrator.example.com"}, "-allowed-origins, -allowed-hosts: httpapi: allowed origin \"orchestrator.example.com\" is not an origin"},
		{[]string{"-allowed-hosts", "https://orchestrator.example.com"}, "-allowed-origins, -allowed-hosts: httpapi: allowed host"},
	} {
		var cfg service.CoordinatorConfig
		fs := flag.NewFlagSet("coordinator", flag.ContinueOnError)
		cfg.RegisterFlags(fs)
		db := filepath.Join(t.TempDir(), "o.db")
		if err := fs.Parse(append([]string{"-db", db}, tc.args...)); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		_, err := cfg.OpenStore(t.Context(), slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
		if _, serr := os.Stat(db); serr == nil {
			t.Errorf("%v: the database was created before the check", tc.args)
		}
	}
	// Accepted, they reach the API: an open API on loopback answers an allowed name.
	var cfg service.CoordinatorConfig
	fs := flag.NewFlagSet("coordinator", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "o.db"), "-ui=false", "-metrics=false",
		"-allowed-hosts", " orchestrator.example.com, *.svc.cluster.local", "-allowed-origins", "https://orchestrator.example.com"}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	store, err := cfg.OpenStore(t.Context(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv, err := cfg.Start(t.Context(), store, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	for host, want := range map[string]int{"orchestrator.example.com": 200, "a.ns.svc.cluster.local:8765": 200, "evil.example": 421} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/agents", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /agents with Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
