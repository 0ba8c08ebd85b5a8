package archtest

import (
	"path"
	"strings"
	"testing"
)

// TestDocsReachable: a reader who starts at README.md reaches every page under docs/ by
// following links (a link to a directory leads to its README.md), so no page is written
// and then lost.
func TestDocsReachable(t *testing.T) {
	r := loadRepo(t)
	seen := map[string]bool{"README.md": true}
	queue := []string{"README.md"}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		for _, target := range mdLinks(string(r.read(t, f))) {
			p, _, _ := strings.Cut(target, "#")
			if p == "" || schemeRe.MatchString(p) || strings.HasPrefix(p, "/") {
				continue
			}
			dest := path.Clean(path.Join(path.Dir(f), p))
			if r.isDir[dest] {
				dest = path.Join(dest, "README.md")
			}
			if strings.HasSuffix(dest, ".md") && r.isFile[dest] && !seen[dest] {
				seen[dest] = true
				queue = append(queue, dest)
			}
		}
	}
	for _, f := range r.files {
		if strings.HasPrefix(f, "docs/") && strings.HasSuffix(f, ".md") && !seen[f] {
			t.Errorf("%s cannot be reached from README.md by following links: link it from README.md, docs/architecture.md or its directory's README.md", f)
		}
	}
}

// mdLinks returns the link targets of a Markdown text outside fenced blocks and code spans.
func mdLinks(text string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		if m := fenceRe.FindStringSubmatch(line); m != nil {
			if fence == "" {
				fence = m[1]
				continue
			}
			if m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(line) == m[1] {
				fence = ""
				continue
			}
		}
		if fence != "" {
			continue
		}
		_, rest := codeSpans(line)
		for _, m := range linkRe.FindAllStringSubmatch(rest, -1) {
			out = append(out, m[1])
		}
		if m := refDefRe.FindStringSubmatch(rest); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}
