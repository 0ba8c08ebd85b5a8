package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The ZooKeeper layout of docs/architecture.md is the fenced block after this marker.
const znodesMarker = "<!-- archtest:znodes -->"

// Where samsa spells its znode paths.
var (
	znodePackages  = []string{"zkmeta", "internal/security/acl"}
	znodeConstants = []string{"zkmeta/znodes.go", "internal/security/acl/zkstore.go"}
)

// TestZnodeLayout holds the ZooKeeper layout of docs/architecture.md to the code: each listed
// path is made of strings the code spells (the part before the first <placeholder> is a
// path the code builds, each later part appears in the code), and every path constant of
// zkmeta/znodes.go and internal/security/acl/zkstore.go is listed (or is the parent of a
// listed path).
func TestZnodeLayout(t *testing.T) {
	r := loadRepo(t)
	doc := string(r.read(t, archDoc))
	_, after, ok := strings.Cut(doc, znodesMarker)
	if !ok {
		t.Fatalf("%s: no %s", archDoc, znodesMarker)
	}
	_, after, ok = strings.Cut(after, "```")
	block, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 {
		t.Fatalf("%s: no fenced block after %s", archDoc, znodesMarker)
	}
	var listed []string
	for _, l := range strings.Split(block, "\n")[1:] { // [0] is the info string
		if f := strings.Fields(l); len(f) > 0 {
			listed = append(listed, f[0])
		}
	}
	if len(listed) < 10 {
		t.Fatalf("the layout lists %d paths: not parsed?", len(listed))
	}

	known, constPaths := codeStrings(t, r)
	for _, p := range listed {
		if msg := checkZnodePath(p, known); msg != "" {
			t.Errorf("%s: layout path %s: %s", archDoc, p, msg)
		}
	}
	for _, c := range constPaths {
		found := false
		for _, p := range listed {
			if p == c.value || strings.HasPrefix(p, c.value+"/") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s:%s = %q is not in the ZooKeeper layout of %s: list it", c.file, c.name, c.value, archDoc)
		}
	}
}

// checkZnodePath checks one listed path against the strings of the code.
func checkZnodePath(p string, known map[string]bool) string {
	if !strings.HasPrefix(p, "/") {
		return "does not start with /"
	}
	segs := strings.Split(p[1:], "/")
	prefix := ""
	i := 0
	for ; i < len(segs) && !strings.Contains(segs[i], "<"); i++ {
		prefix += "/" + segs[i]
	}
	if prefix != "" && !known[prefix] {
		return "the code never spells " + strconv.Quote(prefix)
	}
	for _, seg := range segs[i:] {
		lit := seg
		if j := strings.Index(seg, "<"); j >= 0 {
			lit = seg[:j] // config_change_<seq>: the prefix is the code's
		}
		if lit == "" {
			continue
		}
		found := known[lit]
		for s := range known {
			if found {
				break
			}
			found = strings.Contains(s, "/"+lit+"/") || strings.HasSuffix(s, "/"+lit) || strings.HasPrefix(s, lit+"/")
		}
		if !found {
			return "the code never spells " + strconv.Quote(lit)
		}
	}
	return ""
}

type constPath struct{ file, name, value string }

// codeStrings evaluates the string constants and constant string expressions of the znode
// packages (literals, constants and + of them): every such value, and the exported path
// constants of the constant files.
func codeStrings(t *testing.T, r *repo) (map[string]bool, []constPath) {
	t.Helper()
	type file struct {
		name string
		f    *ast.File
	}
	var files []file
	consts := map[string]ast.Expr{}
	for _, f := range r.files {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		in := false
		for _, p := range znodePackages {
			in = in || path.Dir(f) == p
		}
		if !in {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, r.read(t, f), parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, file{f, af})
		for _, d := range af.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							consts[n.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	var eval func(e ast.Expr, depth int) (string, bool)
	eval = func(e ast.Expr, depth int) (string, bool) {
		if depth > 20 {
			return "", false
		}
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind == token.STRING {
				s, err := strconv.Unquote(e.Value)
				return s, err == nil
			}
		case *ast.Ident:
			if c, ok := consts[e.Name]; ok {
				return eval(c, depth+1)
			}
		case *ast.SelectorExpr:
			if c, ok := consts[e.Sel.Name]; ok {
				return eval(c, depth+1)
			}
		case *ast.ParenExpr:
			return eval(e.X, depth+1)
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				a, ok1 := eval(e.X, depth+1)
				b, ok2 := eval(e.Y, depth+1)
				return a + b, ok1 && ok2
			}
		}
		return "", false
	}
	known := map[string]bool{}
	var paths []constPath
	for _, f := range files {
		ast.Inspect(f.f, func(n ast.Node) bool {
			switch e := n.(type) {
			case *ast.BasicLit, *ast.BinaryExpr:
				if s, ok := eval(e.(ast.Expr), 0); ok {
					known[s] = true
				}
			case *ast.Ident:
				if s, ok := eval(e, 0); ok {
					known[s] = true
				}
			}
			return true
		})
		isConstFile := false
		for _, c := range znodeConstants {
			isConstFile = isConstFile || f.name == c
		}
		if !isConstFile {
			continue
		}
		for _, d := range f.f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if v, ok := eval(n, 0); ok && n.IsExported() && strings.HasPrefix(v, "/") {
						paths = append(paths, constPath{f.name, n.Name, v})
					}
				}
			}
		}
	}
	sort.Slice(paths, func(i, j int) bool { return paths[i].value < paths[j].value })
	if len(paths) < 10 {
		t.Fatalf("found %d path constants in %v: not parsed?", len(paths), znodeConstants)
	}
	return known, paths
}
