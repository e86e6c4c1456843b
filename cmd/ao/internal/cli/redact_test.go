package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	orchestrator "github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
)

// TestURLPasswordIsRedacted: a coordinator URL's password, from --url or ORCHESTRATOR_URL, never appears
// in what ao prints — an unreachable coordinator, a URL the client refuses, an error that quotes the URL
// as given or as the client spells it, the --json error document — and its redacted form
// (url.URL.Redacted's) does, so the person still sees which coordinator it was.
func TestURLPasswordIsRedacted(t *testing.T) {
	t.Parallel()
	// An address nothing listens on: a listener closed at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	const secret = "s3cr%40t"
	quoting := func(u, _ string) (orchestrator.Coordinator, error) {
		// An error that carries the URL as written and as the client spells it (the escape decoded and
		// re-encoded).
		c, err := httpapi.NewClient(u, httpapi.ClientConfig{})
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("httpapi: cannot use %s (%s): %w", u, c.URL(), httpapi.ErrServer)
	}
	for _, tc := range []struct {
		name    string
		url     string
		env     bool
		connect func(string, string) (orchestrator.Coordinator, error)
		json    bool
		want    string
	}{
		{name: "unreachable", url: "http://ann:" + secret + "@" + dead, want: "cannot reach the coordinator at http://ann:xxxxx@" + dead},
		{name: "unreachable, from the environment", url: "http://ann:" + secret + "@" + dead, env: true, want: "http://ann:xxxxx@" + dead},
		{name: "unreachable, --json", url: "http://ann:" + secret + "@" + dead, json: true, want: `"error": "unreachable"`},
		{name: "refused by the client", url: "http://ann:" + secret + "@" + dead + "/?q=1", want: "http://ann:xxxxx@" + dead + "/?q=1"},
		{name: "refused, unparsable", url: "http://ann:" + secret + "@host:port", want: "http://ann:xxxxx@host:port"},
		{name: "quoted", url: "http://ann:" + secret + "@" + dead, connect: quoting, want: "cannot use http://ann:xxxxx@" + dead},
		{name: "quoted, --json", url: "http://ann:" + secret + "@" + dead, connect: quoting, json: true, want: "cannot use http://ann:xxxxx@" + dead},
		{name: "one of several", url: "http://127.0.0.1:1,http://ann:" + secret + "@" + dead, connect: quoting, want: "http://ann:xxxxx@" + dead},
	} {
		var out, errb bytes.Buffer
		env := map[string]string{}
		args := []string{"agents"}
		if tc.env {
			env["ORCHESTRATOR_URL"] = tc.url
		} else {
			args = append(args, "--url", tc.url)
		}
		if tc.json {
			args = append(args, "--json")
		}
		app := &App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Connect: tc.connect,
			Getenv: func(k string) string { return env[k] }, Terminal: func(any) bool { return false }}
		if code := app.Run(context.Background(), args); code == ExitOK {
			t.Errorf("%s: exit 0", tc.name)
		}
		printed := out.String() + errb.String()
		for _, leak := range []string{secret, "s3cr@t"} {
			if strings.Contains(printed, leak) {
				t.Errorf("%s: ao printed the password: %s", tc.name, printed)
			}
		}
		if !strings.Contains(printed, tc.want) {
			t.Errorf("%s: ao printed %q, want it to contain %q", tc.name, printed, tc.want)
		}
	}
}
