package archtest

import (
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The import rules live in docs/architecture.md, in the table between these markers, and
// the package diagram in the mermaid block after the graph marker: the doc is the source of
// truth and this test holds the code to it (and the doc to the code).
const (
	archDoc       = "docs/architecture.md"
	rulesBegin    = "<!-- archtest:imports -->"
	rulesEnd      = "<!-- /archtest:imports -->"
	graphMarker   = "<!-- archtest:graph -->"
	testsOnlyNote = "tests only"
)

type goPackage struct {
	dir         string          // relative to the root: "broker", "internal/config"
	imports     map[string]bool // samsa packages imported by non-test files (as dirs)
	testImports map[string]bool // ... by _test.go files
	hasNonTest  bool
}

// loadPackages parses the imports of every Go file of the repository (build tags ignored:
// a file for another OS obeys the same rules).
func loadPackages(t *testing.T, r *repo) (module string, pkgs map[string]*goPackage) {
	t.Helper()
	for _, l := range strings.Split(string(r.read(t, "go.mod")), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			module = strings.TrimSpace(m)
		}
	}
	if module == "" {
		t.Fatal("go.mod has no module line")
	}
	pkgs = map[string]*goPackage{}
	fset := token.NewFileSet()
	for _, f := range r.files {
		if !strings.HasSuffix(f, ".go") || skipDir(path.Dir(f)) {
			continue
		}
		dir := path.Dir(f)
		p := pkgs[dir]
		if p == nil {
			p = &goPackage{dir: dir, imports: map[string]bool{}, testImports: map[string]bool{}}
			pkgs[dir] = p
		}
		src := r.read(t, f)
		af, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		isTest := strings.HasSuffix(f, "_test.go")
		if !isTest {
			p.hasNonTest = true
		}
		for _, im := range af.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			if ip != module && !strings.HasPrefix(ip, module+"/") {
				continue
			}
			target := strings.TrimPrefix(strings.TrimPrefix(ip, module), "/")
			if isTest {
				p.testImports[target] = true
			} else {
				p.imports[target] = true
			}
		}
	}
	return module, pkgs
}

func skipDir(d string) bool {
	for _, e := range strings.Split(d, "/") {
		if e == "testdata" || strings.HasPrefix(e, ".") || strings.HasPrefix(e, "_") {
			return true
		}
	}
	return false
}

// pattern is a package path, or a path ending in /... for it and every package below.
func patternMatch(pat, pkg string) bool {
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pat == pkg
}

// specificity orders patterns: an exact path beats a /... pattern, a longer one a shorter.
func specificity(pat string) int {
	if strings.HasSuffix(pat, "/...") {
		return len(pat) - 4
	}
	return 10000 + len(pat)
}

type importRule struct {
	line      int
	packages  []string
	allowed   []string
	testsOnly bool
}

var spanRe = regexp.MustCompile("`([^`]+)`")

// parseRules reads the rule table: | `pkg`, `pkg` [(tests only)] | `may`, `import` or — | why |.
func parseRules(t *testing.T, doc string) []importRule {
	t.Helper()
	_, after, ok := strings.Cut(doc, rulesBegin)
	table, _, ok2 := strings.Cut(after, rulesEnd)
	if !ok || !ok2 {
		t.Fatalf("%s: no rule table between %s and %s", archDoc, rulesBegin, rulesEnd)
	}
	startLine := strings.Count(doc[:strings.Index(doc, rulesBegin)], "\n") + 1
	var rules []importRule
	for i, l := range strings.Split(table, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---") || strings.HasPrefix(l, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) < 2 {
			t.Fatalf("%s:%d: a rule row needs | packages | may import | why |", archDoc, startLine+i)
		}
		rule := importRule{line: startLine + i, testsOnly: strings.Contains(cells[0], testsOnlyNote)}
		for _, m := range spanRe.FindAllStringSubmatch(cells[0], -1) {
			rule.packages = append(rule.packages, m[1])
		}
		if len(rule.packages) == 0 {
			continue // the header row
		}
		for _, m := range spanRe.FindAllStringSubmatch(cells[1], -1) {
			rule.allowed = append(rule.allowed, m[1])
		}
		rules = append(rules, rule)
	}
	if len(rules) == 0 {
		t.Fatalf("%s: the rule table has no rows", archDoc)
	}
	return rules
}

// ruleFor returns the rule of the most specific row naming pkg.
func ruleFor(rules []importRule, pkg string) (importRule, string, bool) {
	best, bestPat, bestSpec := importRule{}, "", -1
	for _, r := range rules {
		for _, p := range r.packages {
			if patternMatch(p, pkg) && specificity(p) > bestSpec {
				best, bestPat, bestSpec = r, p, specificity(p)
			}
		}
	}
	return best, bestPat, bestSpec >= 0
}

// TestImportRules: every package's (non-test) imports of samsa packages are allowed by its
// row of the table in docs/architecture.md, a package marked "tests only" is imported by
// test files only unless a row names it exactly, and the table names no package that does
// not exist.
func TestImportRules(t *testing.T) {
	r := loadRepo(t)
	_, pkgs := loadPackages(t, r)
	rules := parseRules(t, string(r.read(t, archDoc)))
	testsOnly := map[string]bool{}
	for _, rule := range rules {
		if rule.testsOnly {
			for _, p := range rule.packages {
				testsOnly[p] = true
			}
		}
	}
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		p := pkgs[d]
		rule, pat, ok := ruleFor(rules, d)
		if !ok {
			t.Errorf("package %s has no row in the import rules of %s: add one (what it may import, and why)", d, archDoc)
			continue
		}
		for target := range p.imports {
			if !allowedImport(rule, target, testsOnly) {
				t.Errorf("%s imports %s, which its rule (%s:%d, %s) does not allow: may import %s",
					d, target, archDoc, rule.line, pat, orNothing(rule.allowed))
			}
		}
		if len(p.imports) > 0 && !p.hasNonTest {
			t.Errorf("package %s: imports recorded without a non-test file (internal error)", d)
		}
	}
	// The table must not describe packages that are gone.
	for _, rule := range rules {
		for _, p := range append(append([]string{}, rule.packages...), rule.allowed...) {
			found := false
			for d := range pkgs {
				if patternMatch(p, d) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s:%d names %s, which matches no package of the repository", archDoc, rule.line, p)
			}
		}
	}
}

// allowedImport: target matches one of the rule's patterns; a tests-only package only by
// its exact name.
func allowedImport(rule importRule, target string, testsOnly map[string]bool) bool {
	for _, a := range rule.allowed {
		if !patternMatch(a, target) {
			continue
		}
		if testsOnly[target] && a != target {
			continue
		}
		return true
	}
	return false
}

func orNothing(s []string) string {
	if len(s) == 0 {
		return "nothing of samsa"
	}
	return strings.Join(s, ", ")
}

var (
	mermaidNodeRe = regexp.MustCompile(`^\s*(\w+)\["([^"]+)"\]`)
	mermaidEdgeRe = regexp.MustCompile(`^\s*(\w+)(?:\["[^"]+"\])?\s*-->\s*(\w+)(?:\["[^"]+"\])?\s*$`)
)

// TestPackageDiagram: the mermaid package diagram of docs/architecture.md draws an arrow
// A --> B exactly when some package drawn as A imports some package drawn as B (non-test
// files). A package is drawn as the node whose label (a package or a /... pattern) matches
// it most specifically; packages no node matches are left out of the picture.
func TestPackageDiagram(t *testing.T) {
	r := loadRepo(t)
	_, pkgs := loadPackages(t, r)
	doc := string(r.read(t, archDoc))
	_, after, ok := strings.Cut(doc, graphMarker)
	if !ok {
		t.Fatalf("%s: no %s before the package diagram", archDoc, graphMarker)
	}
	_, after, ok = strings.Cut(after, "```mermaid")
	block, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 {
		t.Fatalf("%s: no mermaid block after %s", archDoc, graphMarker)
	}
	labels := map[string]string{} // node id -> pattern
	drawn := map[[2]string]bool{}
	for _, l := range strings.Split(block, "\n") {
		if m := mermaidNodeRe.FindStringSubmatch(l); m != nil {
			labels[m[1]] = m[2]
		}
		if m := mermaidEdgeRe.FindStringSubmatch(l); m != nil {
			drawn[[2]string{m[1], m[2]}] = true
		}
	}
	if len(labels) < 3 || len(drawn) < 3 {
		t.Fatalf("the diagram has %d nodes and %d arrows: not parsed?", len(labels), len(drawn))
	}
	nodeOf := func(pkg string) string {
		best, bestSpec := "", -1
		for id, pat := range labels {
			if patternMatch(pat, pkg) && specificity(pat) > bestSpec {
				best, bestSpec = id, specificity(pat)
			}
		}
		return best
	}
	actual := map[[2]string][]string{} // edge -> example imports
	for d, p := range pkgs {
		from := nodeOf(d)
		if from == "" {
			continue
		}
		for target := range p.imports {
			to := nodeOf(target)
			if to == "" || to == from {
				continue
			}
			e := [2]string{from, to}
			actual[e] = append(actual[e], d+" → "+target)
		}
	}
	for e := range drawn {
		if labels[e[0]] == "" || labels[e[1]] == "" {
			t.Errorf("diagram arrow %s --> %s: a node without a [\"package\"] label", e[0], e[1])
			continue
		}
		if _, ok := actual[e]; !ok {
			t.Errorf("the diagram draws %s --> %s, but no package of %s imports one of %s: remove the arrow",
				labels[e[0]], labels[e[1]], labels[e[0]], labels[e[1]])
		}
	}
	for e, why := range actual {
		if !drawn[e] {
			sort.Strings(why)
			t.Errorf("the diagram lacks %s --> %s (%s): draw it, or remove the import", labels[e[0]], labels[e[1]], strings.Join(why, ", "))
		}
	}
	for id, pat := range labels {
		found := false
		for d := range pkgs {
			if patternMatch(pat, d) {
				found = true
			}
		}
		if !found {
			t.Errorf("diagram node %s (%s) matches no package", id, pat)
		}
	}
}
