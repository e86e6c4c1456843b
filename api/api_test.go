// Package api_test keeps the exported API of every public package of the module in a golden file,
// api/<package path>.txt, so that a change to what users may depend on is a reviewed change: this test
// fails on any difference. After an intended change, regenerate the files and review their diff:
//
//	go test ./api -update
//
// A file lists a package's exported declarations without their comments and bodies: constants and
// variables with their types and values, functions and methods with their signatures, types with their
// exported fields (and struct tags, which are the wire format) and methods. Internal packages, main
// packages, tests and packages that export nothing are left out. See docs/api.md for what is public and why.
package api_test

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of api/ from the packages")

func TestAPI(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := publicPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatal("no public package found")
	}
	want := map[string]bool{} // golden files that should exist
	for _, rel := range pkgs {
		got, err := exportedAPI(filepath.Join(root, rel))
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if strings.Count(got, "\n") == 1 {
			continue // nothing exported (a package of tests and docs): nothing to keep
		}
		golden := goldenPath(rel)
		want[golden] = true
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("package %s has no golden file %s: review its API and run go test ./api -update", pkgName(rel), golden)
			continue
		}
		if d := lineDiff(string(old), got); d != "" {
			t.Errorf("the exported API of package %s changed; if that is intended, run go test ./api -update and review:\n%s", pkgName(rel), d)
		}
	}
	// A golden file without its package: the package was removed or made internal.
	err = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".txt") || want[p] {
			return err
		}
		if *update {
			return os.Remove(p)
		}
		t.Errorf("%s has no package any more: run go test ./api -update", p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goldenPath is the golden file of the package at rel (a slash path relative to the module root; "."
// for the root package).
func goldenPath(rel string) string {
	if rel == "." {
		return "orchestrator.txt"
	}
	return filepath.FromSlash(rel) + ".txt"
}

func pkgName(rel string) string {
	if rel == "." {
		return "orchestrator"
	}
	return rel
}

// publicPackages returns the module's importable packages, as slash paths relative to root: every
// directory with non-test Go files of a package other than main, outside internal/ and testdata/.
func publicPackages(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if p != root && (name == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		bp, err := build.Default.ImportDir(p, 0)
		if err != nil || bp.Name == "main" || len(bp.GoFiles) == 0 {
			return nil // no package here, or a command
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	slices.Sort(out)
	return out, err
}

// exportedAPI renders the exported declarations of the package in dir, one per line (a type's exported
// fields and interface methods indented under it), sorted.
func exportedAPI(dir string) (string, error) {
	bp, err := build.Default.ImportDir(dir, 0)
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	var lines []string
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return "", err
		}
		for _, decl := range f.Decls {
			lines = append(lines, declLines(fset, decl)...)
		}
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n", bp.Name)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

func declLines(fset *token.FileSet, decl ast.Decl) []string {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return nil
		}
		recv := ""
		if d.Recv != nil && len(d.Recv.List) > 0 {
			typ := d.Recv.List[0].Type
			if !ast.IsExported(baseTypeName(typ)) {
				return nil
			}
			recv = "(" + render(fset, typ) + ") "
		}
		return []string{"func " + recv + d.Name.Name + strings.TrimPrefix(render(fset, d.Type), "func")}
	case *ast.GenDecl:
		var out []string
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					out = append(out, typeLines(fset, s)...)
				}
			case *ast.ValueSpec:
				for i, n := range s.Names {
					if !n.IsExported() {
						continue
					}
					l := d.Tok.String() + " " + n.Name
					if s.Type != nil {
						l += " " + render(fset, s.Type)
					}
					if i < len(s.Values) {
						l += " = " + oneLine(render(fset, s.Values[i]))
					}
					out = append(out, l)
				}
			}
		}
		return out
	}
	return nil
}

// typeLines renders a type: its head line, and for structs and interfaces one line per exported field or
// method, prefixed with the type's name so that they sort with it.
func typeLines(fset *token.FileSet, s *ast.TypeSpec) []string {
	head := "type " + s.Name.Name
	if s.TypeParams != nil {
		head += render(fset, s.TypeParams)
	}
	if s.Assign.IsValid() {
		head += " ="
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		out := []string{head + " struct"}
		for _, f := range t.Fields.List {
			typ := render(fset, f.Type)
			tag := ""
			if f.Tag != nil {
				tag = " " + f.Tag.Value
			}
			if len(f.Names) == 0 { // embedded
				if ast.IsExported(baseTypeName(f.Type)) {
					out = append(out, head+" struct, embeds "+typ+tag)
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					out = append(out, head+" struct, field "+n.Name+" "+typ+tag)
				}
			}
		}
		return out
	case *ast.InterfaceType:
		out := []string{head + " interface"}
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				out = append(out, head+" interface, embeds "+render(fset, m.Type))
				continue
			}
			for _, n := range m.Names {
				if n.IsExported() {
					out = append(out, head+" interface, method "+n.Name+strings.TrimPrefix(render(fset, m.Type), "func"))
				}
			}
		}
		return out
	}
	return []string{head + " " + oneLine(render(fset, s.Type))}
}

// baseTypeName is the name of a (receiver or embedded) type without pointers, packages or type arguments.
func baseTypeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return baseTypeName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.IndexExpr:
		return baseTypeName(t.X)
	case *ast.IndexListExpr:
		return baseTypeName(t.X)
	}
	return ""
}

func render(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, n); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return b.String()
}

// oneLine joins a multi-line expression (a composite literal, say) into one line.
func oneLine(s string) string {
	fields := strings.Fields(s)
	return strings.Join(fields, " ")
}

// lineDiff lists the lines only in old (-) and only in new (+), or "" when they are equal.
func lineDiff(old, new string) string {
	if old == new {
		return ""
	}
	o, n := strings.Split(old, "\n"), strings.Split(new, "\n")
	var b strings.Builder
	for _, l := range o {
		if !slices.Contains(n, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range n {
		if !slices.Contains(o, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	if b.Len() == 0 {
		return "(the same lines in another order)"
	}
	return b.String()
}
