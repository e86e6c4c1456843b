package orchestrator_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoTextFiles returns the repository's Go and Markdown files, skipping hidden directories and
// node_modules.
func repoTextFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The documentation and the comments stand alone: they cite nothing a user of the module does not have
// (the design notes it was written from), but link into docs/ or give the reason itself.
func TestDocsCiteNothingOutsideTheRepository(t *testing.T) {
	// The character classes keep this file from matching itself.
	outside := regexp.MustCompile(`(?i)\b[s]eeds? ?0\d\d\b|\b[s]eed's\b|\bthe [s]eeds\b|DESIG[N] §|\bAD[R]-\d+`)
	for _, path := range repoTextFiles(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, a document outside the repository: link into docs/ or give the reason", path, i+1, m)
			}
		}
	}
}

// Every relative link of the Markdown files leads to a file of the repository and, with a #fragment, to a
// heading of it.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading := regexp.MustCompile(`(?m)^#+ (.+)$`)
	for _, path := range repoTextFiles(t) {
		if !strings.HasSuffix(path, ".md") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), file)
			}
			db, err := os.ReadFile(dest)
			if err != nil {
				if _, serr := os.Stat(dest); serr != nil {
					t.Errorf("%s links to %s, which does not exist", path, target)
				}
				continue // a directory
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			found := false
			for _, h := range heading.FindAllStringSubmatch(string(db), -1) {
				if anchor(h[1]) == frag {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s links to %s, but %s has no heading with that anchor", path, target, dest)
			}
		}
	}
}

// anchor is the fragment GitHub gives a Markdown heading: lower case, punctuation dropped, spaces as
// hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
