// Command appendagent is the deterministic agent of the scale-out tests. It appends its AGENT_RUN_ID as one
// line to the file named by --log (one write on a file opened with O_APPEND, so concurrent runs never
// interleave), sleeps --sleep_ms milliseconds, and prints {"run_id": …}. A run executed twice therefore
// shows up twice in the log, and a run never executed not at all.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	logPath := flag.String("log", "", "file to append AGENT_RUN_ID to")
	sleepMS := flag.Int("sleep_ms", 0, "how long the run takes, in milliseconds")
	flag.Parse()
	id := os.Getenv("AGENT_RUN_ID")
	if id == "" || *logPath == "" {
		fmt.Fprintln(os.Stderr, "appendagent: AGENT_RUN_ID and --log are required")
		os.Exit(2)
	}
	f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "appendagent:", err)
		os.Exit(1)
	}
	if _, err := f.Write([]byte(id + "\n")); err != nil {
		fmt.Fprintln(os.Stderr, "appendagent:", err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "appendagent:", err)
		os.Exit(1)
	}
	time.Sleep(time.Duration(*sleepMS) * time.Millisecond)
	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"run_id": id})
}
