package orchestrator_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
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

// docs/README.md is the index of the documentation: every page of docs/ is listed in it.
func TestDocsIndexListsEveryPage(t *testing.T) {
	t.Parallel()
	index, err := os.ReadFile("docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "docs/openapi.yaml")
	for _, page := range pages {
		name := filepath.Base(page)
		if name == "README.md" {
			continue
		}
		if !strings.Contains(string(index), "]("+name+")") {
			t.Errorf("docs/README.md does not list %s: add a row for it to the index", page)
		}
	}
}

// The package documentation's [Name] links name identifiers the root package declares, so that go doc
// and pkgsite render them as links: an unknown name is printed as plain text, brackets and all.
func TestPackageDocLinksResolve(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/agentorchestrator/orchestrator")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				known[n] = true
			}
		}
	}
	funcs := func(prefix string, fs []*doc.Func) {
		for _, f := range fs {
			known[prefix+f.Name] = true
		}
	}
	values(pkg.Consts)
	values(pkg.Vars)
	funcs("", pkg.Funcs)
	for _, typ := range pkg.Types {
		known[typ.Name] = true
		values(typ.Consts)
		values(typ.Vars)
		funcs("", typ.Funcs)
		funcs(typ.Name+".", typ.Methods)
		for _, spec := range typ.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			switch tt := ts.Type.(type) {
			case *ast.InterfaceType:
				for _, m := range tt.Methods.List {
					for _, n := range m.Names {
						known[typ.Name+"."+n.Name] = true
					}
				}
			case *ast.StructType:
				for _, field := range tt.Fields.List {
					for _, n := range field.Names {
						known[typ.Name+"."+n.Name] = true
					}
				}
			}
		}
	}
	links := regexp.MustCompile(`\[\*?([A-Z][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)?)\]`).FindAllStringSubmatch(pkg.Doc, -1)
	if len(links) == 0 {
		t.Fatal("the package documentation has no [Name] links")
	}
	for _, m := range links {
		if !known[m[1]] {
			t.Errorf("the package documentation (doc.go) links [%s], which the root package does not declare", m[1])
		}
	}
}
