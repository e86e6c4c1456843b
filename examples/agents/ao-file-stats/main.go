// Command ao-file-stats walks a directory tree and prints a JSON report of its text files: counts, lines
// and bytes per extension, and the largest files. It is the example deterministic agent behind
// examples/blueprints/file-stats.json.
//
// Build it under the name the blueprint runs:
//
//	go build -o ~/bin/ao-file-stats ./examples/agents/ao-file-stats
//
// Usage:
//
//	ao-file-stats --path DIR [--patterns "*.go,*.md"] [--exclude ".git,node_modules,vendor"] [--top 10]
//
// Flags take "--name value" or "--name=value". --patterns and --exclude are comma-separated lists, which
// is how the orchestrator's deterministic executor passes an array parameter.
//
//   - --path: the directory to walk (required). Symbolic links below it are not followed.
//   - --patterns: when given, only files matching one of these globs are counted. A glob without '/'
//     matches the file name ("*.go"); one with '/' matches the path relative to DIR ("cmd/*.go").
//   - --exclude: globs of directory and file names to skip (default ".git,node_modules,vendor"); a
//     skipped directory is not entered. --exclude "" skips nothing.
//   - --top: how many of the largest files to list (default 10; 0 = none).
//
// A file is binary, and skipped, when its first 8 KiB hold a NUL byte. Lines are newline characters, plus
// one for a last line without one.
//
// Output: one JSON object on stdout,
//
//	{"path", "patterns", "exclude", "files", "lines", "bytes",
//	 "extensions":[{"extension", "files", "lines", "bytes"}], "largest_files":[{"path", "bytes", "lines"}],
//	 "binary_files_skipped", "excluded_entries", "special_files_skipped", "errors":[{"path", "error"}],
//	 "duration_ms"}
//
// extensions sorted by lines (descending), then files, bytes and name; largest_files by bytes
// (descending), then path; errors by path. Progress goes to stderr: a line every 1000 files and a final
// summary line.
//
// Exit status: 0 when the walk ran (unreadable entries are listed in "errors"); 2 for invalid flags or a
// --path that is missing or not a directory, with the reason on stderr; 1 when interrupted.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// DefaultExclude is --exclude's default.
const DefaultExclude = ".git,node_modules,vendor"

const usageText = `Usage: ao-file-stats --path DIR [flags]

Walks DIR and prints a JSON report of its text files on stdout: files, lines and
bytes per extension, and the largest files. Progress goes to stderr.

Flags:
  --path DIR          directory to walk (required)
  --patterns GLOBS    comma-separated globs; only matching files are counted
                      ("*.go" matches file names, "cmd/*.go" paths relative to DIR)
  --exclude GLOBS     comma-separated directory/file names to skip (default "` + DefaultExclude + `";
                      --exclude "" skips nothing)
  --top N             list the N largest files (default 10; 0 = none)
  --help              show this help

Exit status: 0 done (unreadable entries are listed in "errors"), 1 interrupted,
2 invalid flags or path.
`

const shortUsage = "usage: ao-file-stats --path DIR [--patterns GLOBS] [--exclude GLOBS] [--top N] (--help for details)\n"

func parseFlags(args []string) (Options, error) {
	var (
		opts              Options
		patterns, exclude string
	)
	fs := flag.NewFlagSet("ao-file-stats", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&opts.Root, "path", "", "")
	fs.StringVar(&patterns, "patterns", "", "")
	fs.StringVar(&exclude, "exclude", DefaultExclude, "")
	fs.IntVar(&opts.Top, "top", 10, "")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected argument %q (all input is given as --flags)", fs.Arg(0))
	}
	if opts.Top < 0 {
		return opts, fmt.Errorf("--top must be 0 or more, not %d", opts.Top)
	}
	opts.Patterns, opts.Exclude = splitList(patterns), splitList(exclude)
	if err := ValidatePatterns("patterns", opts.Patterns); err != nil {
		return opts, err
	}
	if err := ValidatePatterns("exclude", opts.Exclude); err != nil {
		return opts, err
	}
	root, err := ResolveRoot(opts.Root)
	if err != nil {
		return opts, err
	}
	opts.Root = root
	return opts, nil
}

// splitList splits a comma-separated flag value, trimming blanks and dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// run is the whole program; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, usageText)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "ao-file-stats: %v\n%s", err, shortUsage)
		return 2
	}
	opts.Progress = stderr
	report, err := Scan(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "ao-file-stats: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "done: %d files, %d lines, %d bytes; %d binary skipped, %d excluded, %d errors in %d ms\n",
		report.Files, report.Lines, report.Bytes, report.BinaryFilesSkipped, report.ExcludedEntries,
		len(report.Errors), report.DurationMS)
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(report); err != nil {
		fmt.Fprintf(stderr, "ao-file-stats: writing the report: %v\n", err)
		return 1
	}
	if report.Interrupted {
		fmt.Fprintln(stderr, "ao-file-stats: interrupted; the report above is partial")
		return 1
	}
	return 0
}
