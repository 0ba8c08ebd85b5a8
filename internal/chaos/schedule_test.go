package chaos

import (
	"context"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestScheduleIsAFunctionOfTheSeed(t *testing.T) {
	faults := FaultNames()
	a := Schedule(42, faults, 10*time.Second, 5*time.Second, 5*time.Minute, 0)
	b := Schedule(42, faults, 10*time.Second, 5*time.Second, 5*time.Minute, 0)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different schedules:\n%s\n%s", FormatSchedule(42, a), FormatSchedule(42, b))
	}
	c := Schedule(43, faults, 10*time.Second, 5*time.Second, 5*time.Minute, 0)
	if reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 42 and 43 gave the same schedule:\n%s", FormatSchedule(42, a))
	}
	// One every interval from one interval on; the last one ends before the duration.
	if len(a) != 29 {
		t.Fatalf("%d steps in 5m every 10s lasting 5s, want 29 (10s..290s)", len(a))
	}
	for i, s := range a {
		if s.Seq != i+1 || s.At != time.Duration(i+1)*10*time.Second {
			t.Fatalf("step %d: %v", i, s)
		}
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s.Action] = true
	}
	if len(seen) < 4 {
		t.Fatalf("29 draws from %d faults hit only %v", len(faults), seen)
	}
	// A longer run starts with the shorter run's steps: the draws do not depend on the duration.
	long := Schedule(42, faults, 10*time.Second, 5*time.Second, time.Hour, 0)
	if !reflect.DeepEqual(long[:len(a)], a) {
		t.Fatal("a longer duration changed the first steps")
	}
	if got := Schedule(42, faults, 10*time.Second, 5*time.Second, 0, 7); len(got) != 7 || !reflect.DeepEqual(got, a[:7]) {
		t.Fatalf("max 7 without duration: %v", got)
	}
	if Schedule(42, nil, time.Second, 0, time.Minute, 0) != nil {
		t.Fatal("no faults, yet a schedule")
	}
}

func TestFlagsAndValidate(t *testing.T) {
	parse := func(args ...string) (*FaultOptions, error) {
		fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o := RegisterFaultFlags(fs)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return o, o.Validate()
	}
	o, err := parse("--faults", "kill-leader, pause-controller", "--faults", "cut-broker", "--start-local", "3", "--zookeeper", "127.0.0.1:2181/x")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.Faults, []string{"kill-leader", "pause-controller", "cut-broker"}) || o.Interval != 10*time.Second || o.length() != 5*time.Second {
		t.Fatalf("%+v", o)
	}
	for _, bad := range [][]string{
		{"--faults", "kill-everything", "--fault-cmd", "true"},
		{"--faults", "kill-leader"}, // no way to apply it
		{"--start-local", "3"},      // no ZooKeeper
		{"--faults", "kill-leader", "--fault-cmd", "true", "--local-cluster", "/tmp/x"},
		{"--heal-cmd", "true"},
		{"--faults", "expire-zk-session", "--local-cluster", "/tmp/x"}, // needs the proxies
		{"--start-local", "1", "--zookeeper", "z:1", "--local-prop", "novalue"},
	} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func metadata() *kmsg.MetadataResponse {
	r := kmsg.NewPtrMetadataResponse()
	for _, id := range []int32{3, 1, 2} {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = id, "h"+string(rune('0'+id)), 9090+id
		r.Brokers = append(r.Brokers, b)
	}
	r.ControllerID = 2
	tp := kmsg.NewMetadataResponseTopic()
	tp.Topic = kmsg.StringPtr("chaos")
	for p, leader := range []int32{1, -1, 3} {
		pp := kmsg.NewMetadataResponseTopicPartition()
		pp.Partition, pp.Leader = int32(p), leader
		tp.Partitions = append(tp.Partitions, pp)
	}
	r.Topics = append(r.Topics, tp)
	return r
}

func TestChooseTarget(t *testing.T) {
	for _, c := range []struct {
		action string
		pick   uint64
		id     int32
		why    string
	}{
		{"kill-leader", 0, 1, "leader of chaos-0"},
		{"kill-leader", 2, 3, "leader of chaos-2"},
		{"pause-leader", 1, 3, "leader of chaos-2"}, // partition 1 has no leader: the next one
		{"expire-zk-session", 3, 1, "leader of chaos-0"},
		{"kill-controller", 0, 2, "controller"},
		{"kill-random", 0, 1, "random broker"}, // sorted ids 1,2,3
		{"kill-random", 5, 3, "random broker"},
	} {
		got, err := chooseTarget(metadata(), Step{Action: c.action, Pick: c.pick})
		if err != nil || got.id != c.id || got.why != c.why || got.port != 9090+c.id {
			t.Errorf("%s pick %d: %+v, %v; want broker %d (%s)", c.action, c.pick, got, err, c.id, c.why)
		}
	}
	r := metadata()
	r.ControllerID = -1
	if _, err := chooseTarget(r, Step{Action: "pause-controller"}); err == nil {
		t.Error("no controller, yet a target")
	}
	r.Topics[0].Partitions = nil
	if _, err := chooseTarget(r, Step{Action: "kill-leader"}); err == nil {
		t.Error("no partitions, yet a leader")
	}
}

func TestHookSubstitution(t *testing.T) {
	tg := target{id: 3, host: "kafka-3.example.com", port: 9092}
	got := expandHook("ssh h{broker} sudo systemctl kill kafka # {host}:{port} {action}", "kill-leader", tg)
	if want := "ssh h3 sudo systemctl kill kafka # kafka-3.example.com:9092 kill-leader"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	// A host from Metadata cannot inject a command.
	tg.host = "x; rm -rf /"
	if got := expandHook("ping {host}", "kill-leader", tg); got != `ping 'x; rm -rf /'` {
		t.Fatalf("got %q", got)
	}
	if got := shellQuote("it's"); got != `'it'\''s'` {
		t.Fatalf("got %q", got)
	}

	dir := t.TempDir()
	h := &hookApplier{faultCmd: "echo {action} {broker} >> " + dir + "/log", healCmd: "echo healed {broker} >> " + dir + "/log"}
	undo, detail, err := h.apply(context.Background(), "pause-leader", target{id: 2, host: "h", port: 1})
	if err != nil || undo == nil || !strings.Contains(detail, "echo pause-leader 2") {
		t.Fatalf("apply: %v %q", err, detail)
	}
	if _, err := undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, _ := readFile(dir + "/log")
	if out != "pause-leader 2\nhealed 2\n" {
		t.Fatalf("commands ran as %q", out)
	}
	h = &hookApplier{faultCmd: "echo no such broker >&2; exit 3"}
	if _, _, err := h.apply(context.Background(), "kill-leader", tg); err == nil || !strings.Contains(err.Error(), "no such broker") {
		t.Fatalf("failing hook: %v", err)
	}
}
