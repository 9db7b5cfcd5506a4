package errdecl_test

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// decl is an error declared at the top level of a package.
type decl struct {
	dir, file, name string
	typ             bool // an error type (it has an Error() string method); else a sentinel
	constrained     bool // its file has a //go:build line
}

// TestErrorsInErrorsGo: every sentinel (a top-level var named Err... or
// err...) and every error type of a package is declared in its errors.go.
func TestErrorsInErrorsGo(t *testing.T) {
	for _, d := range moduleErrors(t) {
		if filepath.Base(d.file) != "errors.go" && !d.constrained {
			t.Errorf("%s: %s is declared outside %s", d.file, d.name, filepath.Join(d.dir, "errors.go"))
		}
	}
}

// TestErrorTypeNamesUnique: no two packages declare an exported error type
// of the same name (engine.RemoteError and rpc.RemoteError were two
// different things).
func TestErrorTypeNamesUnique(t *testing.T) {
	dirs := map[string][]string{}
	for _, d := range moduleErrors(t) {
		if d.typ && ast.IsExported(d.name) {
			dirs[d.name] = append(dirs[d.name], d.dir)
		}
	}
	for name, ds := range dirs {
		if len(ds) > 1 {
			sort.Strings(ds)
			t.Errorf("error type %s is declared in %d packages: %s", name, len(ds), strings.Join(ds, ", "))
		}
	}
}

// moduleErrors parses every non-test Go file of the module and returns its
// top-level errors.
func moduleErrors(t *testing.T) []decl {
	t.Helper()
	root := moduleRoot(t)
	var out []decl
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out = append(out, fileErrors(f, rel)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no errors found: the walk missed the module")
	}
	return resolveTypes(out)
}

// fileErrors returns f's sentinels, and its Error methods as types named
// after their receivers (resolveTypes moves them to the file of the type).
func fileErrors(f *ast.File, rel string) []decl {
	constrained := false
	for _, g := range f.Comments {
		for _, c := range g.List {
			if constraint.IsGoBuild(c.Text) {
				constrained = true
			}
		}
	}
	dir := filepath.Dir(rel)
	var out []decl
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					if d.Tok != token.VAR {
						continue
					}
					for _, n := range s.Names {
						if isSentinelName(n.Name) {
							out = append(out, decl{dir: dir, file: rel, name: n.Name, constrained: constrained})
						}
					}
				case *ast.TypeSpec:
					out = append(out, decl{dir: dir, file: rel, name: "type " + s.Name.Name, constrained: constrained})
				}
			}
		case *ast.FuncDecl:
			if d.Recv != nil && d.Name.Name == "Error" && d.Type.Params.NumFields() == 0 && d.Type.Results.NumFields() == 1 {
				out = append(out, decl{dir: dir, file: rel, name: "method " + recvName(d.Recv.List[0].Type), typ: true, constrained: constrained})
			}
		}
	}
	return out
}

// resolveTypes turns the Error methods into the types they belong to,
// declared where the type is, and drops the types that are not errors.
func resolveTypes(all []decl) []decl {
	where := map[string]decl{}
	for _, d := range all {
		if n, ok := strings.CutPrefix(d.name, "type "); ok {
			where[d.dir+"."+n] = d
		}
	}
	var out []decl
	seen := map[string]bool{}
	for _, d := range all {
		switch {
		case strings.HasPrefix(d.name, "type "):
		case strings.HasPrefix(d.name, "method "):
			n := strings.TrimPrefix(d.name, "method ")
			k := d.dir + "." + n
			if td, ok := where[k]; ok && !seen[k] {
				seen[k] = true
				td.name, td.typ = n, true
				out = append(out, td)
			}
		default:
			out = append(out, d)
		}
	}
	return out
}

// isSentinelName reports whether a top-level var is named as an error:
// Err or err followed by an upper-case letter.
func isSentinelName(n string) bool {
	rest, ok := strings.CutPrefix(n, "Err")
	if !ok {
		rest, ok = strings.CutPrefix(n, "err")
	}
	return ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z'
}

// recvName is the name of a method receiver's type.
func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.IndexListExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}
