package integration

// The experiment format of the study guide (docs/study/README.md describes it for writers):
// a fenced block with the info string `console` holds commands, lines starting with "$ ",
// each followed by the output the chapter shows. A command line ending in a backslash goes on
// onto the next line. Each non-blank shown line, whitespace collapsed, must be a substring of
// a line of the real output, in order; a line "..." only says that output was left out. A
// block whose info string also says `no-test` is shown but not run.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// studyChapter is one docs/study/NN-*.md file.
type studyChapter struct {
	name     string // file name without .md: the subtest's name
	path     string
	commands []studyCommand
}

// studyCommand is one "$ " line (with its continuation lines) and the output shown after it.
type studyCommand struct {
	line     int    // 1-based line of the "$ " in the chapter
	text     string // the command as bash reads it
	expected []string
}

// studyChapterFile names the chapters: two digits, a dash, a name.
var studyChapterFile = regexp.MustCompile(`^[0-9][0-9]-.*\.md$`)

// loadStudyChapters reads every chapter of dir in file order.
func loadStudyChapters(dir string) ([]studyChapter, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && studyChapterFile.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var chs []studyChapter
	for _, n := range names {
		p := filepath.Join(dir, n)
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		cmds, err := parseStudyBlocks(string(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", n, err)
		}
		chs = append(chs, studyChapter{name: strings.TrimSuffix(n, ".md"), path: p, commands: cmds})
	}
	return chs, nil
}

// parseStudyBlocks returns the commands of a chapter's tested console blocks, in order.
func parseStudyBlocks(md string) ([]studyCommand, error) {
	var (
		cmds    []studyCommand
		fence   string // the open fence ("```" or "~~~"...), "" outside blocks
		indent  string
		tested  bool
		cur     *studyCommand
		cont    bool // the previous command line ended in a backslash
		blockAt int
	)
	sc := bufio.NewScanner(strings.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		trimmed := strings.TrimLeft(raw, " \t")
		if fence == "" {
			f := fenceOf(trimmed)
			if f == "" {
				continue
			}
			fence, indent, blockAt = f, raw[:len(raw)-len(trimmed)], n
			info := strings.Fields(strings.TrimPrefix(trimmed, f))
			tested = len(info) > 0 && info[0] == "console"
			for _, w := range info[1:] {
				if w == "no-test" {
					tested = false
				}
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
			if cont {
				return nil, fmt.Errorf("line %d: the block ends inside a command continued with a backslash", n)
			}
			if cur != nil {
				cmds = append(cmds, *cur)
			}
			fence, cur = "", nil
			continue
		}
		if !tested {
			continue
		}
		line := strings.TrimPrefix(raw, indent)
		switch {
		case cont:
			cur.text += "\n" + line
			cont = strings.HasSuffix(line, `\`)
		case strings.HasPrefix(line, "$ "):
			if cur != nil {
				cmds = append(cmds, *cur)
			}
			cur = &studyCommand{line: n, text: strings.TrimPrefix(line, "$ ")}
			cont = strings.HasSuffix(line, `\`)
		case cur == nil:
			if strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("line %d: console block (line %d) has output before its first \"$ \" command", n, blockAt)
			}
		default:
			cur.expected = append(cur.expected, line)
		}
	}
	if fence != "" {
		return nil, fmt.Errorf("line %d: code block never closed", blockAt)
	}
	return cmds, sc.Err()
}

// fenceOf returns the fence a line opens ("```", "````", "~~~"...) or "".
func fenceOf(s string) string {
	for _, c := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, c))
		if n >= 3 {
			return s[:n]
		}
	}
	return ""
}

// collapse squeezes runs of whitespace to one space and trims the ends.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// matchStudyOutput checks that the shown lines appear, in order, each within one line of the
// real output. It returns the first shown line that does not ("" when all do).
func matchStudyOutput(expected []string, actual string) string {
	var lines []string
	for _, l := range strings.Split(actual, "\n") {
		lines = append(lines, collapse(l))
	}
	pos := 0
	for _, e := range expected {
		e = collapse(e)
		if e == "" || e == "..." {
			continue
		}
		found := false
		for ; pos < len(lines); pos++ {
			if strings.Contains(lines[pos], e) {
				found = true
				pos++
				break
			}
		}
		if !found {
			return e
		}
	}
	return ""
}

// studyRewriter turns scripts/cluster.sh's defaults, which the chapters show, into the test
// cluster's: its ports and its directory.
type studyRewriter struct {
	ports map[string]string // "9092" -> "41234"
	dir   string            // the cluster directory, absolute
}

var (
	studyPortRE = regexp.MustCompile(`\b(9092|9093|9094|9404|9405|9406|2181)\b`)
	studyDirRE  = regexp.MustCompile(`(^|[^\w.])(\./)?\.cluster\b`)
)

func newStudyRewriter(zkPort, basePort, httpBasePort int, dir string) *studyRewriter {
	r := &studyRewriter{ports: map[string]string{"2181": strconv.Itoa(zkPort)}, dir: dir}
	for i := 0; i < 3; i++ {
		r.ports[strconv.Itoa(9092+i)] = strconv.Itoa(basePort + i)
		r.ports[strconv.Itoa(9404+i)] = strconv.Itoa(httpBasePort + i)
	}
	return r
}

func (r *studyRewriter) rewrite(s string) string {
	s = studyPortRE.ReplaceAllStringFunc(s, func(p string) string { return r.ports[p] })
	return studyDirRE.ReplaceAllString(s, "${1}"+strings.ReplaceAll(r.dir, "$", "$$"))
}

// TestStudyFormat: the parser finds the commands of tested blocks only, with continuation
// lines, and the matcher wants the shown lines in order; the rewriter maps the defaults.
func TestStudyFormat(t *testing.T) {
	md := "intro\n```console\n$ echo a \\\n  b\na   b\n...\n$ true\n```\n" +
		"```console no-test\n$ false\n```\n```go\n$ nope\n```\n" +
		"   ```console\n   $ ls .cluster/broker-1\n   data\n   ```\n"
	cmds, err := parseStudyBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 3 || cmds[0].text != "echo a \\\n  b" || cmds[1].text != "true" ||
		cmds[2].text != "ls .cluster/broker-1" || cmds[0].line != 3 {
		t.Fatalf("parsed %+v", cmds)
	}
	if _, err := parseStudyBlocks("```console\noutput first\n```\n"); err == nil {
		t.Error("output before the first command: no error")
	}
	if _, err := parseStudyBlocks("```console\n$ true\n"); err == nil {
		t.Error("unclosed block: no error")
	}
	out := "x 1\nfirst   line  here\nsecond\n"
	if m := matchStudyOutput([]string{"first line", "...", "second"}, out); m != "" {
		t.Errorf("in order: missed %q", m)
	}
	if m := matchStudyOutput([]string{"second", "first line"}, out); m != "first line" {
		t.Errorf("out of order: got %q", m)
	}
	if m := matchStudyOutput([]string{"second", "second"}, out); m != "second" {
		t.Errorf("one output line matched twice: got %q", m)
	}
	rw := newStudyRewriter(3000, 4000, 5000, "/tmp/c")
	got := rw.rewrite("localhost:9092,localhost:9094 127.0.0.1:2181 :9405 19092 ./.cluster/broker-1 .cluster scripts/cluster.sh")
	want := "localhost:4000,localhost:4002 127.0.0.1:3000 :5001 19092 /tmp/c/broker-1 /tmp/c scripts/cluster.sh"
	if got != want {
		t.Errorf("rewrite:\n got %s\nwant %s", got, want)
	}
}
