package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseJavaDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"PT1H", time.Hour, true},
		{"P1DT2H3M4S", 26*time.Hour + 3*time.Minute + 4*time.Second, true},
		{"pt0.5s", 500 * time.Millisecond, true},
		{"PT-1M", -time.Minute, true},
		{"-PT10S", -10 * time.Second, true},
		{"P2D", 48 * time.Hour, true},
		{"P", 0, false},
		{"PT", 0, false},
		{"1H", 0, false},
		{"P1H", 0, false},
	} {
		got, err := parseJavaDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%q: %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && err.Error() != "Text cannot be parsed to a Duration" {
			t.Errorf("%q: message %q", tt.in, err)
		}
	}
}

func TestResetPlanCSV(t *testing.T) {
	plan, err := parseResetPlan("t,0,5\nt,1,7\n", "g")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]map[resetTP]int64{"g": {{"t", 0}: 5, {"t", 1}: 7}}; !reflect.DeepEqual(plan, want) {
		t.Fatalf("single-group plan %v", plan)
	}
	// Four columns: the group column wins even with one --group.
	plan, err = parseResetPlan("a,t,0,1\nb,t,0,2\n", "g")
	if err != nil || plan["a"][resetTP{"t", 0}] != 1 || plan["b"][resetTP{"t", 0}] != 2 || plan["g"] != nil {
		t.Fatalf("multi-group plan %v, %v", plan, err)
	}
	if _, err := parseResetPlan("t,0,5\n", ""); err == nil || !strings.Contains(err.Error(), "Not enough column values") {
		t.Fatalf("three columns for several groups: %v", err)
	}
	if _, err := parseResetPlan("t,x,5\n", "g"); err == nil {
		t.Fatal("bad partition accepted")
	}
	results := []groupReset{{"g,1", map[resetTP]int64{{"t", 1}: 3, {"t", 0}: 4}}, {"h", map[resetTP]int64{}}}
	if got := exportOffsetsCSV(results, false); got != "\"g,1\",t,0,4\n\"g,1\",t,1,3\n" {
		t.Fatalf("export %q", got)
	}
	if got := exportOffsetsCSV(results[:1], true); got != "t,0,4\nt,1,3\n" {
		t.Fatalf("export %q", got)
	}
}

func TestResetArgs(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t"}, "requires one of the following scenarios"},
		{[]string{"--reset-offsets", "--group", "g", "--to-earliest"}, "One of the reset scopes should be defined: --all-topics, --topic."},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--by-duration", "PT1H"}, `can't be used with option`},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--by-duration", "1H"}, "Text cannot be parsed to a Duration"},
		{[]string{"--reset-offsets", "--group", "g", "--topic", "t", "--to-latest", "--execute", "--dry-run"}, "only accepts one of [execute] and [dry-run]"},
	} {
		var errb bytes.Buffer
		code := runConsumerGroups(append([]string{"--bootstrap-server", "127.0.0.1:1"}, tt.args...), nil, &bytes.Buffer{}, &errb)
		if code != 1 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tt.args, code, errb.String(), tt.want)
		}
	}
	// --from-file needs no scope.
	o, err := parseGroupsArgs([]string{"--bootstrap-server", "h:1", "--reset-offsets", "--group", "g", "--from-file", "f.csv"}, &bytes.Buffer{})
	if err != nil || !o.fromFile.set {
		t.Fatalf("--from-file: %v", err)
	}
}

// --by-duration, --export and --from-file against a live broker.
func TestResetOffsetsEndToEnd(t *testing.T) {
	t.Parallel()
	addrs, _ := startTxnBrokers(t, 1)
	bs := addrs[0]
	const topic = "reset"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// Partition 0: records 2 h, 30 min and 1 min old; partition 1 stays empty.
	var recs []*kgo.Record
	for _, age := range []time.Duration{2 * time.Hour, 30 * time.Minute, time.Minute} {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("v"), Timestamp: now.Add(-age)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commit := func(group string, at int64) {
		t.Helper()
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
		offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 0, LeaderEpoch: -1})
		if err := adm.CommitAllOffsets(ctx, group, offs); err != nil {
			t.Fatal(err)
		}
	}
	commit("g1", 3)
	commit("g2", 3)
	run := func(args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runConsumerGroups(append([]string{"--bootstrap-server", bs}, args...), nil, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	committed := func(group string) map[int32]int64 {
		t.Helper()
		f, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int32]int64{}
		f.Each(func(r kadm.OffsetResponse) { m[r.Partition] = r.At })
		return m
	}

	out, errOut := run("--reset-offsets", "--group", "g1", "--topic", topic, "--by-duration", "PT1H")
	want := "\nWarn: Partition 1 from topic reset is empty. Falling back to latest known offset.\n" +
		"\nGROUP                          TOPIC                          PARTITION  NEW-OFFSET     \n" +
		"g1                             reset                          0          1              \n" +
		"g1                             reset                          1          0              \n"
	if out != want {
		t.Fatalf("--by-duration output:\n%q\nwant\n%q", out, want)
	}
	if errOut != resetNoExecuteWarning+"\n" {
		t.Fatalf("stderr %q", errOut)
	}
	if c := committed("g1"); c[0] != 3 {
		t.Fatalf("a dry run committed: %v", c)
	}
	out, _ = run("--reset-offsets", "--group", "g1", "--topic", topic+":0", "--by-duration", "P0DT0H20M", "--execute")
	if !strings.Contains(out, "g1                             reset                          0          2") {
		t.Fatalf("20 minutes back:\n%s", out)
	}
	if c := committed("g1"); c[0] != 2 {
		t.Fatalf("after --execute: %v", c)
	}

	// --export writes the plan as CSV: without a group column for one group, with it for several.
	out, _ = run("--reset-offsets", "--group", "g1", "--all-topics", "--to-earliest", "--export", "--dry-run")
	if out != "reset,0,0\nreset,1,0\n\n" {
		t.Fatalf("--export one group: %q", out)
	}
	out, _ = run("--reset-offsets", "--group", "g1", "--group", "g2", "--topic", topic, "--to-latest", "--export", "--dry-run")
	if out != "g1,reset,0,3\ng1,reset,1,0\ng2,reset,0,3\ng2,reset,1,0\n\n" {
		t.Fatalf("--export two groups: %q", out)
	}

	// --from-file reads what --export wrote; out-of-range offsets are clamped with a warning.
	dir := t.TempDir()
	single := filepath.Join(dir, "one.csv")
	os.WriteFile(single, []byte("reset,0,100\nreset,1,0\n"), 0o644)
	out, errOut = run("--reset-offsets", "--group", "g2", "--from-file", single, "--execute")
	if !strings.Contains(out, "g2                             reset                          0          3") ||
		!strings.Contains(errOut, "New offset (100) is higher than latest offset for topic partition reset-0. Value will be set to 3") {
		t.Fatalf("--from-file:\n%s%s", out, errOut)
	}
	multi := filepath.Join(dir, "multi.csv")
	os.WriteFile(multi, []byte("g1,reset,0,1\ng2,reset,0,2\n"), 0o644)
	out, _ = run("--reset-offsets", "--group", "g1", "--group", "g2", "--group", "g3", "--from-file", multi, "--execute")
	if !strings.Contains(out, "\nError: No reset plan for group g3 found\n") {
		t.Fatalf("group without a plan:\n%s", out)
	}
	if c1, c2 := committed("g1"), committed("g2"); c1[0] != 1 || c2[0] != 2 {
		t.Fatalf("after multi-group --from-file: g1 %v g2 %v", c1, c2)
	}
	var outb, errb bytes.Buffer
	code := runConsumerGroups([]string{"--bootstrap-server", bs, "--reset-offsets", "--group", "g3", "--topic", topic, "--shift-by", "1", "--dry-run"}, nil, &outb, &errb)
	if code != 1 || errb.String() != "Cannot shift offset for partition reset-0 since there is no current committed offset\n" {
		t.Fatalf("--shift-by without a committed offset: exit %d, %q", code, errb.String())
	}
}
