package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Options configure a scan.
type Options struct {
	// Root is the directory to walk.
	Root string
	// Patterns, when non-empty, select the files counted (see [MatchPattern]); others are ignored.
	Patterns []string
	// Exclude are globs of entry names (directories or files) to skip; a skipped directory is not entered.
	Exclude []string
	// Top is how many of the largest files to list.
	Top int
	// Progress, when set, receives a line every ProgressEvery files counted.
	Progress io.Writer
	// ProgressEvery defaults to 1000.
	ProgressEvery int
}

// binarySniffBytes is how much of a file is searched for a NUL byte to call it binary.
const binarySniffBytes = 8 << 10

// ExtensionStats sums the files of one extension.
type ExtensionStats struct {
	// Extension is lower-cased with its dot (".go"); "" for files without one (README, Makefile, .bashrc).
	Extension string `json:"extension"`
	Files     int    `json:"files"`
	Lines     int64  `json:"lines"`
	Bytes     int64  `json:"bytes"`
}

// FileStats is one file of the largest-files list.
type FileStats struct {
	// Path is relative to the root, with forward slashes.
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	Lines int64  `json:"lines"`
}

// FileError is an entry that could not be read.
type FileError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// Report is the program's result, printed as JSON on stdout.
type Report struct {
	// Path is the absolute path of the root.
	Path     string   `json:"path"`
	Patterns []string `json:"patterns"`
	Exclude  []string `json:"exclude"`
	// Files, Lines and Bytes are the totals over the counted (text) files.
	Files int   `json:"files"`
	Lines int64 `json:"lines"`
	Bytes int64 `json:"bytes"`
	// Extensions are sorted by lines, then files, then bytes (all descending), then extension.
	Extensions []ExtensionStats `json:"extensions"`
	// LargestFiles are the Top largest counted files, by bytes descending, then path.
	LargestFiles []FileStats `json:"largest_files"`
	// BinaryFilesSkipped counts files matching the patterns with a NUL byte in their first 8 KiB.
	BinaryFilesSkipped int `json:"binary_files_skipped"`
	// ExcludedEntries counts directories and files skipped by name (a directory's contents not included).
	ExcludedEntries int `json:"excluded_entries"`
	// SpecialFilesSkipped counts symbolic links (never followed), devices, sockets and pipes.
	SpecialFilesSkipped int `json:"special_files_skipped"`
	// Errors are the entries that could not be read, sorted by path.
	Errors      []FileError `json:"errors"`
	Interrupted bool        `json:"interrupted,omitempty"`
	DurationMS  int64       `json:"duration_ms"`
}

// MatchPattern reports whether a file matches a glob of path.Match: a pattern containing '/' is matched
// against the path relative to the root ("cmd/*.go", a leading '/' allowed), one without against the
// file's name ("*.go"), like a .gitignore entry.
func MatchPattern(pattern, relPath string) bool {
	subject := path.Base(relPath)
	if strings.Contains(pattern, "/") {
		pattern = strings.TrimPrefix(pattern, "/")
		subject = relPath
	}
	ok, err := path.Match(pattern, subject)
	return err == nil && ok
}

// ValidatePatterns checks that every glob is well-formed.
func ValidatePatterns(flag string, patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("--%s: %q is not a valid glob: %v", flag, p, err)
		}
	}
	return nil
}

// Scan walks opts.Root (not following symbolic links) and sums the text files. It fails only when the
// root is not a readable directory; unreadable entries below it are listed in Report.Errors. A cancelled
// ctx ends the walk early with Interrupted set.
func Scan(ctx context.Context, opts Options) (*Report, error) {
	began := time.Now()
	root, err := ResolveRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	if err := ValidatePatterns("patterns", opts.Patterns); err != nil {
		return nil, err
	}
	if err := ValidatePatterns("exclude", opts.Exclude); err != nil {
		return nil, err
	}
	if opts.Top < 0 {
		return nil, fmt.Errorf("--top must be 0 or more, not %d", opts.Top)
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 1000
	}
	r := &Report{
		Path:         root,
		Patterns:     append([]string{}, opts.Patterns...),
		Exclude:      append([]string{}, opts.Exclude...),
		Extensions:   []ExtensionStats{},
		LargestFiles: []FileStats{},
		Errors:       []FileError{},
	}
	exts := map[string]*ExtensionStats{}
	buf := make([]byte, 32<<10)

	walkErr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if err != nil {
			r.Errors = append(r.Errors, FileError{Path: rel, Error: cleanError(err)})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == root {
			return nil
		}
		if matchAny(opts.Exclude, d.Name()) {
			r.ExcludedEntries++
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			r.SpecialFilesSkipped++
			return nil
		}
		if len(opts.Patterns) > 0 && !matchAnyPath(opts.Patterns, rel) {
			return nil
		}
		size, lines, binary, err := countFile(p, buf)
		if err != nil {
			r.Errors = append(r.Errors, FileError{Path: rel, Error: cleanError(err)})
			return nil
		}
		if binary {
			r.BinaryFilesSkipped++
			return nil
		}
		ext := Extension(d.Name())
		e := exts[ext]
		if e == nil {
			e = &ExtensionStats{Extension: ext}
			exts[ext] = e
		}
		e.Files++
		e.Lines += lines
		e.Bytes += size
		r.Files++
		r.Lines += lines
		r.Bytes += size
		r.LargestFiles = insertLargest(r.LargestFiles, FileStats{Path: rel, Bytes: size, Lines: lines}, opts.Top)
		if opts.Progress != nil && r.Files%opts.ProgressEvery == 0 {
			fmt.Fprintf(opts.Progress, "scanned %d files (%d lines, %d bytes so far)\n", r.Files, r.Lines, r.Bytes)
		}
		return nil
	})
	if walkErr != nil {
		if ctx.Err() == nil || !errors.Is(walkErr, ctx.Err()) {
			return nil, walkErr
		}
		r.Interrupted = true
	}

	for _, e := range exts {
		r.Extensions = append(r.Extensions, *e)
	}
	sort.Slice(r.Extensions, func(i, j int) bool {
		a, b := r.Extensions[i], r.Extensions[j]
		switch {
		case a.Lines != b.Lines:
			return a.Lines > b.Lines
		case a.Files != b.Files:
			return a.Files > b.Files
		case a.Bytes != b.Bytes:
			return a.Bytes > b.Bytes
		}
		return a.Extension < b.Extension
	})
	sort.Slice(r.Errors, func(i, j int) bool { return r.Errors[i].Path < r.Errors[j].Path })
	r.DurationMS = time.Since(began).Milliseconds()
	return r, nil
}

// ResolveRoot returns the absolute, symlink-free path of a directory, or an error saying why it is not one.
func ResolveRoot(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("--path is required")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("--path %q: %v", p, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("--path %q does not exist", p)
		}
		return "", fmt.Errorf("--path %q: %v", p, cleanError(err))
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return "", fmt.Errorf("--path %q: %v", p, cleanError(err))
	}
	if !info.IsDir() {
		return "", fmt.Errorf("--path %q is not a directory", p)
	}
	f, err := os.Open(resolved)
	if err != nil {
		return "", fmt.Errorf("--path %q cannot be read: %v", p, cleanError(err))
	}
	f.Close()
	return resolved, nil
}

// Extension is a file's lower-cased extension with its dot, or "" when it has none. A leading dot alone
// (".bashrc") is not an extension.
func Extension(name string) string {
	ext := filepath.Ext(name)
	if ext == name || ext == "." {
		return ""
	}
	return strings.ToLower(ext)
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

func matchAnyPath(patterns []string, rel string) bool {
	for _, p := range patterns {
		if MatchPattern(p, rel) {
			return true
		}
	}
	return false
}

// countFile returns a file's size and line count — newlines, plus one for a last line without one — and
// whether it is binary (a NUL byte in its first 8 KiB; the rest is then not read).
func countFile(p string, buf []byte) (size, lines int64, binary bool, err error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, 0, false, err
	}
	defer f.Close()
	var last byte
	for {
		n, err := f.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if size < binarySniffBytes {
				head := chunk[:min(int64(n), binarySniffBytes-size)]
				if bytes.IndexByte(head, 0) >= 0 {
					return 0, 0, true, nil
				}
			}
			size += int64(n)
			lines += int64(bytes.Count(chunk, []byte{'\n'}))
			last = chunk[n-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, false, err
		}
	}
	if size > 0 && last != '\n' {
		lines++
	}
	return size, lines, false, nil
}

// insertLargest keeps list sorted by bytes descending, then path, and at most top long.
func insertLargest(list []FileStats, f FileStats, top int) []FileStats {
	if top <= 0 {
		return list
	}
	less := func(a, b FileStats) bool {
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Path < b.Path
	}
	i := sort.Search(len(list), func(i int) bool { return less(f, list[i]) })
	if i >= top {
		return list
	}
	if len(list) < top {
		list = append(list, FileStats{})
	}
	copy(list[i+1:], list[i:])
	list[i] = f
	return list
}

// cleanError drops the path an *fs.PathError repeats: the report puts it beside the error.
func cleanError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}
