// Command testagent is the deterministic agent the end-to-end tests run through a real runner. Its flags
// are the parameters of the e2e blueprints (the deterministic executor turns parameters into --key value),
// so one blueprint serves every test:
//
//	--log FILE          append "start <AGENT_RUN_ID>" when it starts and "end <AGENT_RUN_ID>" before it exits
//	--ignore_term       ignore SIGTERM (the grandchildren inherit the ignored disposition)
//	--children N        start N grandchildren (/bin/sleep 300) in its own process group
//	--term_exit_ms MS   on SIGTERM, exit 143 after MS milliseconds (the grandchildren keep ignoring it)
//	--pids FILE         write its pid and its grandchildren's pids, one a line, once they all run
//	--stderr LINE       write LINE to stderr
//	--release FILE      block until FILE exists
//	--sleep_ms MS       sleep MS milliseconds
//	--exit CODE         exit with CODE (after writing a line saying so to stderr)
//	--fail_first N      exit 3 in its first N runs: while --log holds at most N start lines (a retried session's
//	                    attempts share the file)
//	--get PATHS         GET each of the comma-separated paths from the runner's gateway with the run's token,
//	                    and report each answer's status and body in the output's "gets"
//	--tag, --url, --depth  ignored (labels, and the web-crawler example's parameters)
//
// Unless it exits non-zero it prints one JSON object to stdout: its run and session ids, working directory,
// pid, argv and the parameters it read on stdin.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	logFile := flag.String("log", "", "file to append start/end lines with AGENT_RUN_ID to")
	ignoreTerm := flag.Bool("ignore_term", false, "ignore SIGTERM")
	children := flag.Int("children", 0, "grandchildren to start (/bin/sleep 300)")
	termExit := flag.Int("term_exit_ms", 0, "on SIGTERM, exit after this many milliseconds")
	pids := flag.String("pids", "", "file to write the pids to")
	stderrLine := flag.String("stderr", "", "line to write to stderr")
	release := flag.String("release", "", "block until this file exists")
	sleepMS := flag.Int("sleep_ms", 0, "milliseconds to sleep")
	exitCode := flag.Int("exit", 0, "exit code")
	failFirst := flag.Int("fail_first", 0, "exit 3 while --log holds no more than this many start lines (its attempts so far)")
	gets := flag.String("get", "", "comma-separated paths to GET from the gateway")
	flag.String("tag", "", "free-form label (ignored)")
	flag.String("url", "", "ignored (the web-crawler example's parameters)")
	flag.String("depth", "", "ignored (the web-crawler example's parameters)")
	flag.Parse()

	runID := os.Getenv("AGENT_RUN_ID")
	stdin, _ := io.ReadAll(os.Stdin)
	appendLine(*logFile, "start "+runID)

	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM) // before the grandchildren start, so they inherit it
	}
	var kids []*exec.Cmd
	for range *children {
		c := exec.Command("/bin/sleep", "300")
		if err := c.Start(); err != nil {
			fail("start grandchild: %v", err)
		}
		kids = append(kids, c)
	}
	if *termExit > 0 {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		go func() {
			<-ch
			fmt.Fprintf(os.Stderr, "got SIGTERM; exiting in %dms\n", *termExit)
			time.Sleep(time.Duration(*termExit) * time.Millisecond)
			os.Exit(143)
		}()
	}
	if *pids != "" {
		lines := []string{strconv.Itoa(os.Getpid())}
		for _, k := range kids {
			lines = append(lines, strconv.Itoa(k.Process.Pid))
		}
		writeAtomic(*pids, strings.Join(lines, "\n")+"\n")
	}
	if *stderrLine != "" {
		fmt.Fprintln(os.Stderr, *stderrLine)
	}
	if *release != "" {
		for {
			if _, err := os.Stat(*release); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if *sleepMS > 0 {
		time.Sleep(time.Duration(*sleepMS) * time.Millisecond)
	}
	if *failFirst > 0 && *exitCode == 0 {
		if b, err := os.ReadFile(*logFile); err == nil && strings.Count(string(b), "start ") <= *failFirst {
			*exitCode = 3
		}
	}
	if *exitCode != 0 {
		appendLine(*logFile, "end "+runID)
		fmt.Fprintf(os.Stderr, "testagent: failing with exit code %d\n", *exitCode)
		os.Exit(*exitCode)
	}
	wd, _ := os.Getwd()
	var params any
	if err := json.Unmarshal(stdin, &params); err != nil {
		params = string(stdin)
	}
	out, _ := json.Marshal(map[string]any{
		"gets":       getAll(*gets),
		"run_id":     runID,
		"session_id": os.Getenv("AGENT_SESSION_ID"),
		"cwd":        wd,
		"pid":        os.Getpid(),
		"args":       os.Args[1:],
		"params":     params,
	})
	fmt.Println(string(out))
	appendLine(*logFile, "end "+runID)
}

// appendLine appends one line with a single write(2) on an O_APPEND file, so concurrent agents never
// interleave their lines.
func appendLine(path, line string) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail("open %s: %v", path, err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		fail("append to %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		fail("close %s: %v", path, err)
	}
}

// writeAtomic writes the whole file at once (rename), so a reader never sees part of it.
func writeAtomic(path, content string) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		fail("write %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		fail("rename %s: %v", tmp, err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testagent: "+format+"\n", args...)
	os.Exit(70)
}

// getAll GETs each comma-separated path from the gateway (AGENT_ORCHESTRATOR_API_URL) with the run's token
// (AGENT_ORCHESTRATOR_TOKEN) and returns each answer as {"path", "status", "body"}.
func getAll(paths string) []map[string]any {
	if paths == "" {
		return nil
	}
	var out []map[string]any
	for _, p := range strings.Split(paths, ",") {
		req, err := http.NewRequest("GET", os.Getenv("AGENT_ORCHESTRATOR_API_URL")+p, nil)
		if err != nil {
			fail("GET %s: %v", p, err)
		}
		req.Header.Set("Authorization", "Bearer "+os.Getenv("AGENT_ORCHESTRATOR_TOKEN"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fail("GET %s: %v", p, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var doc any
		if json.Unmarshal(body, &doc) != nil {
			doc = string(body)
		}
		out = append(out, map[string]any{"path": p, "status": resp.StatusCode, "body": doc})
	}
	return out
}
