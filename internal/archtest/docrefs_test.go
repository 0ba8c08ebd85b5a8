package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// TestDocRefs checks README.md and docs/**/*.md against the convention written at the top of
// docs/architecture.md ("How to read these docs"): relative links point to files that exist
// (and headings, for a #fragment), paths in code spans exist, `file.go:Name` names a
// declaration of that file, and no reference carries a line number. One subtest per
// Markdown file, so a chapter being written fails alone.
func TestDocRefs(t *testing.T) {
	r := loadRepo(t)
	var docs []string
	for _, f := range r.files {
		if f == "README.md" || (strings.HasPrefix(f, "docs/") && strings.HasSuffix(f, ".md")) {
			docs = append(docs, f)
		}
	}
	if len(docs) < 2 {
		t.Fatalf("found %v: where are README.md and docs/?", docs)
	}
	c := &refChecker{r: r, decls: map[string]map[string]bool{}}
	for _, f := range docs {
		t.Run(f, func(t *testing.T) {
			for _, p := range c.checkDoc(f, string(r.read(t, f))) {
				t.Error(p)
			}
		})
	}
}

type refChecker struct {
	r     *repo
	mu    sync.Mutex
	decls map[string]map[string]bool // .go file -> declared names
}

var (
	// [text](target "title"); the text may hold code spans and brackets one level deep.
	linkRe    = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRe  = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	htmlSrcRe = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	urlRe     = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://\S+`)
	// a .go name in running text: path/to/file.go, optionally :Name or :123.
	textGoRe = regexp.MustCompile(`(?:^|[^\w./*-])((?:[\w.*-]+/)*[\w*-]+\.go)(?::([\w.()*]+))?\b`)
	headRe   = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	fenceRe  = regexp.MustCompile("^\\s{0,3}(```+|~~~+)")
	schemeRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// checkDoc returns one message per broken reference of a Markdown file.
func (c *refChecker) checkDoc(file, text string) []string {
	var problems []string
	add := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: ", file, line)+fmt.Sprintf(format, args...))
	}
	lines := strings.Split(text, "\n")
	fence := ""
	for i, line := range lines {
		n := i + 1
		if m := fenceRe.FindStringSubmatch(line); m != nil {
			mark := m[1]
			switch {
			case fence == "":
				fence = mark
				continue
			case mark[0] == fence[0] && len(mark) >= len(fence) && strings.TrimSpace(line) == mark:
				fence = ""
				continue
			}
		}
		if fence != "" || strings.HasPrefix(line, "    ") && !strings.HasPrefix(strings.TrimSpace(line), "-") && !strings.HasPrefix(strings.TrimSpace(line), "|") && isIndentedCode(lines, i) {
			continue
		}
		// Code spans.
		spans, rest := codeSpans(line)
		for _, s := range spans {
			if msg := c.checkSpan(s); msg != "" {
				add(n, "`%s`: %s", s, msg)
			}
		}
		// Links, outside code spans (a link text may hold one).
		var targets []string
		for _, m := range linkRe.FindAllStringSubmatch(rest, -1) {
			targets = append(targets, m[1])
		}
		if m := refDefRe.FindStringSubmatch(rest); m != nil {
			targets = append(targets, m[1])
		}
		for _, m := range htmlSrcRe.FindAllStringSubmatch(rest, -1) {
			targets = append(targets, m[1])
		}
		for _, tgt := range targets {
			if msg := c.checkLink(file, lines, tgt); msg != "" {
				add(n, "link %q: %s", tgt, msg)
			}
		}
		// Running text: drop link targets and URLs, then look for .go names.
		rest = linkRe.ReplaceAllString(rest, "] ")
		rest = urlRe.ReplaceAllString(rest, " ")
		if refDefRe.MatchString(rest) {
			continue
		}
		for _, m := range textGoRe.FindAllStringSubmatch(rest, -1) {
			ref := m[1]
			if m[2] != "" {
				ref += ":" + m[2]
			}
			if msg := c.checkSpan(ref); msg != "" {
				add(n, "%s: %s", ref, msg)
			}
		}
	}
	return problems
}

// codeSpans returns a line's code spans (trimmed) and the line with each span replaced by a
// space. A span opens with a run of backticks and closes with the next run of the same length.
func codeSpans(line string) (spans []string, rest string) {
	var b strings.Builder
	i := 0
	for i < len(line) {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		end := -1
		for j := i + n; j < len(line); {
			if line[j] != '`' {
				j++
				continue
			}
			k := 0
			for j+k < len(line) && line[j+k] == '`' {
				k++
			}
			if k == n {
				end = j
				break
			}
			j += k
		}
		if end < 0 { // no closing run: the backticks are text
			b.WriteString(line[i : i+n])
			i += n
			continue
		}
		spans = append(spans, strings.TrimSpace(line[i+n:end]))
		b.WriteByte(' ')
		i = end + n
	}
	return spans, b.String()
}

// isIndentedCode reports whether line i is an indented code block: indented by four spaces
// after a blank line (a list item's continuation is not).
func isIndentedCode(lines []string, i int) bool {
	for j := i - 1; j >= 0; j-- {
		l := lines[j]
		if strings.TrimSpace(l) == "" {
			continue
		}
		if !strings.HasPrefix(l, "    ") {
			return j < i-1 && !strings.HasPrefix(strings.TrimSpace(l), "-") && !strings.HasPrefix(strings.TrimSpace(l), "*") && !unicode.IsDigit(rune(strings.TrimSpace(l)[0]))
		}
	}
	return true
}

// checkLink checks a link target, relative to the Markdown file.
func (c *refChecker) checkLink(file string, lines []string, target string) string {
	if target == "" || schemeRe.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // a URL (http:, mailto:) is not ours to check
	}
	p, frag, _ := strings.Cut(target, "#")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	if lineAnchorRe.MatchString(frag) && !strings.HasSuffix(p, ".md") {
		return "a line anchor rots: link the file and name the function (file.go:Name)"
	}
	dest := file
	if p != "" {
		if strings.HasPrefix(p, "/") {
			return "absolute path: write it relative to " + file
		}
		dest = path.Clean(path.Join(path.Dir(file), p))
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return "points outside the repository"
		}
		if !c.r.isFile[dest] && !c.r.isDir[dest] {
			return "no such file or directory " + dest
		}
	}
	if frag != "" && strings.HasSuffix(dest, ".md") && c.r.isFile[dest] {
		var heads []string
		if dest == file {
			heads = lines
		} else {
			heads = strings.Split(string(mustRead(c.r, dest)), "\n")
		}
		if !anchors(heads)[strings.ToLower(frag)] {
			return fmt.Sprintf("%s has no heading with anchor #%s", dest, frag)
		}
	}
	return ""
}

// anchors returns the GitHub anchors of a Markdown file's headings.
func anchors(lines []string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, l := range lines {
		if m := fenceRe.FindStringSubmatch(l); m != nil {
			if fence == "" {
				fence = m[1]
			} else if m[1][0] == fence[0] && strings.TrimSpace(l) == m[1] {
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		m := headRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if k := seen[s]; k > 0 {
			out[fmt.Sprintf("%s-%d", s, k)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// slug is GitHub's heading anchor: the rendered text in lower case, punctuation other than
// '-' and '_' dropped, spaces to '-'.
func slug(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	lineNoRe     = regexp.MustCompile(`^\d+(-\d+)?$`)
	lineAnchorRe = regexp.MustCompile(`^L\d+(-L?\d+)?$`)
)

// checkSpan checks a code span (or a .go name of the running text) that looks like a path of
// the repository; anything else (a command, a config key, a Kafka class) is left alone.
func (c *refChecker) checkSpan(s string) string {
	if s == "" || strings.ContainsAny(s, " \t") || schemeRe.MatchString(s) && !strings.Contains(s, ".go:") {
		return ""
	}
	if strings.ContainsAny(s, "<>{}$") {
		return "" // a placeholder (NN_<api>.go) or a shell expression
	}
	s = strings.TrimPrefix(s, "./")
	file, name, hasName := strings.Cut(s, ":")
	if b := path.Base(file); b == ".go" || strings.HasPrefix(b, "_") {
		return "" // the extension itself, or a suffix (_test.go, _linux.go)
	}
	file = strings.TrimSuffix(file, "/...") // a Go package pattern: the directory
	if strings.HasSuffix(s, "/...") {
		file += "/"
	}
	isGo := strings.HasSuffix(file, ".go")
	first, _, hasSlash := strings.Cut(file, "/")
	underTop := hasSlash && c.r.top[first]
	if !isGo && !underTop {
		return ""
	}
	if !isGo && hasName {
		return "" // e.g. docs/x.md:heading is not a convention of ours
	}
	if hasSlash && !underTop && strings.Contains(first, ".") {
		return "" // another module's file: github.com/IBM/sarama/x.go
	}
	if strings.HasSuffix(file, ".scala") || strings.HasSuffix(file, ".java") {
		return ""
	}
	if hasName && lineNoRe.MatchString(name) {
		return "a line number rots: name the function instead (" + file + ":Name)"
	}
	cands := c.resolve(file, underTop)
	if len(cands) == 0 {
		switch {
		case underTop:
			return "no such file or directory from the repository root"
		case hasSlash:
			return "no file of the repository ends with this path (write it from the repository root)"
		default:
			return "no file of the repository has this name"
		}
	}
	if !hasName {
		return ""
	}
	name = normalizeName(name)
	for _, f := range cands {
		if c.declared(f)[name] {
			return ""
		}
	}
	msg := fmt.Sprintf("%s declares no %s (write Type.Method for a method, Name otherwise)", strings.Join(cands, ", "), name)
	if elsewhere := c.findInPackage(cands, name); len(elsewhere) > 0 {
		msg += "; it is declared in " + strings.Join(elsewhere, ", ")
	}
	return msg
}

// findInPackage looks for a name the reference did not find in the other files of the same
// directories, to say where it moved.
func (c *refChecker) findInPackage(cands []string, name string) []string {
	var out []string
	seen := map[string]bool{}
	for _, cand := range cands {
		dir := path.Dir(cand)
		for _, f := range c.r.files {
			if path.Dir(f) != dir || !strings.HasSuffix(f, ".go") || seen[f] {
				continue
			}
			seen[f] = true
			if c.declared(f)[name] {
				out = append(out, f)
			}
		}
	}
	return out
}

// resolve returns the files (or the directory) a path names: from the root when it starts
// with a top-level directory; otherwise any file whose path ends with it (a bare name, or a
// path relative to the package a heading names).
func (c *refChecker) resolve(p string, fromRoot bool) []string {
	dir := strings.HasSuffix(p, "/")
	p = strings.TrimSuffix(p, "/")
	var out []string
	if !dir && !strings.ContainsAny(p, "*?") {
		for _, f := range c.r.byBase[path.Base(p)] {
			if (fromRoot && f == p) || (!fromRoot && (f == p || strings.HasSuffix(f, "/"+p))) {
				out = append(out, f)
			}
		}
		if fromRoot && c.r.isDir[p] {
			out = append(out, p)
		}
		return out
	}
	if fromRoot {
		if strings.Contains(p, "*") {
			for _, f := range c.r.files {
				if globMatch(p, f) {
					out = append(out, f)
				}
			}
			for d := range c.r.isDir {
				if dir && globMatch(p, d) {
					out = append(out, d)
				}
			}
			return out
		}
		if c.r.isDir[p] || (!dir && c.r.isFile[p]) {
			return []string{p}
		}
		return nil
	}
	for _, f := range c.r.files {
		if !dir && matchTail(p, f) {
			out = append(out, f)
		}
	}
	if dir {
		for d := range c.r.isDir {
			if matchTail(p, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// matchTail reports whether the last path elements of f match the pattern p.
func matchTail(p, f string) bool {
	return globMatch("**/"+p, f)
}

// globMatch matches a slash-separated path against a pattern where * and ? stay inside one
// path element and **/ stands for any number of elements.
func globMatch(p, f string) bool {
	globMu.Lock()
	re, ok := globCache[p]
	if !ok {
		re = regexp.MustCompile(globRegexp(p))
		globCache[p] = re
	}
	globMu.Unlock()
	return re.MatchString(f)
}

var (
	globMu    sync.Mutex
	globCache = map[string]*regexp.Regexp{}
)

func globRegexp(p string) string {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch {
		case strings.HasPrefix(p[i:], "**/"):
			re.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(p[i:], "**"):
			re.WriteString(".*")
			i++
		case p[i] == '*':
			re.WriteString("[^/]*")
		case p[i] == '?':
			re.WriteString("[^/]")
		default:
			re.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	re.WriteString("$")
	return re.String()
}

// normalizeName turns (*T).M and (T).M into T.M.
func normalizeName(n string) string {
	if strings.HasPrefix(n, "(") {
		if typ, m, ok := strings.Cut(n[1:], ")"); ok {
			n = strings.TrimPrefix(typ, "*") + m
		}
	}
	return strings.TrimSuffix(n, "()")
}

// declared returns the names a Go file declares: functions, Type.Method, types, Type.Field,
// Interface.Method, variables and constants.
func (c *refChecker) declared(file string) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.decls[file]; ok {
		return d
	}
	d := map[string]bool{}
	c.decls[file] = d
	if !strings.HasSuffix(file, ".go") || !c.r.isFile[file] {
		return d
	}
	f, err := parser.ParseFile(token.NewFileSet(), path.Join(c.r.root, file), nil, parser.SkipObjectResolution)
	if err != nil {
		return d
	}
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv != nil && len(decl.Recv.List) > 0 {
				d[recvName(decl.Recv.List[0].Type)+"."+decl.Name.Name] = true
			} else {
				d[decl.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					d[spec.Name.Name] = true
					var fields *ast.FieldList
					switch typ := spec.Type.(type) {
					case *ast.StructType:
						fields = typ.Fields
					case *ast.InterfaceType:
						fields = typ.Methods
					}
					if fields != nil {
						for _, fl := range fields.List {
							for _, n := range fl.Names {
								d[spec.Name.Name+"."+n.Name] = true
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						d[n.Name] = true
					}
				}
			}
		}
	}
	return d
}

func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}

func mustRead(r *repo, f string) []byte {
	b, err := readFile(r, f)
	if err != nil {
		return nil
	}
	return b
}
