package archtest

import (
	"strings"
	"testing"
)

// TestDocRefsCatches shows the checker can fail: each line of a made-up page holds one
// reference, good or broken, and the checker must flag exactly the broken ones.
func TestDocRefsCatches(t *testing.T) {
	r := loadRepo(t)
	c := &refChecker{r: r, decls: map[string]map[string]bool{}}
	cases := []struct {
		line string
		bad  bool
	}{
		{"the log: `logstore/append.go`", false},
		{"`logstore/append.go:Log.AppendAsLeader` appends", false},
		{"`logstore/append.go:(*Log).AppendAsLeader` appends", false},
		{"`logstore/segment.go:OffsetFromFileName` and `logstore/segment.go:Segment`", false},
		{"a glob `broker/*.go` and a directory `logstore/`", false},
		{"bare `append.go` as in files.md, and `recordbatch/batch.go` under internal/", false},
		{"running text names logstore/append.go:Log.AppendAsLeader too", false},
		{"[files](files.md) and [a heading](architecture.md#how-to-read-these-docs)", false},
		{"[code](../logstore/log.go), [web](https://kafka.apache.org/), `go test ./...`", false},
		{"Kafka's `core/src/main/scala/kafka/log/UnifiedLog.scala`, `github.com/IBM/sarama/client.go`", false},
		{"`logstore/apend.go` misspelt", true},
		{"`logstore/append.go:Log.AppendAsLeeder` misspelt", true},
		{"`logstore/append.go:AppendAsLeader` without its receiver", true},
		{"`logstore/append.go:99` a line number", true},
		{"`nosuchfile.go` bare", true},
		{"`broker/nosuch_*.go` empty glob", true},
		{"`logstore/nosuchdir/` missing directory", true},
		{"[gone](nosuch.md)", true},
		{"[bad anchor](architecture.md#no-such-heading)", true},
		{"[outside](../../elsewhere.md)", true},
		{"running text names logstore/nosuch.go", true},
		{"[a line](../logstore/log.go#L12)", true},
		{"[escaped](../logstore/log.go) and [spaced](%2E%2E/logstore/log.go)", false},
	}
	for _, tc := range cases {
		got := c.checkDoc("docs/selftest.md", tc.line)
		if tc.bad && len(got) == 0 {
			t.Errorf("not flagged: %s", tc.line)
		}
		if !tc.bad && len(got) > 0 {
			t.Errorf("flagged a good reference: %s", strings.Join(got, "; "))
		}
	}
	// A name in the wrong file of its package: the message says where it is.
	if got := c.checkDoc("docs/selftest.md", "`logstore/log.go:Log.AppendAsLeader`"); len(got) != 1 || !strings.Contains(got[0], "logstore/append.go") {
		t.Errorf("a moved function: want one message naming logstore/append.go, got %q", got)
	}
	// Fenced blocks are the study runner's business, not this checker's.
	if got := c.checkDoc("docs/selftest.md", "```console\n$ cat nosuch.go\n```\n"); len(got) > 0 {
		t.Errorf("a fenced block was checked: %v", got)
	}
}
