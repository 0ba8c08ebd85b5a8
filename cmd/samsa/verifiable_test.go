package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lineWatch is a concurrency-safe stdout that calls check after every write, so a test can
// stop a tool once its output shows enough.
type lineWatch struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	check func(string) bool
	hit   chan struct{}
	once  sync.Once
}

func newLineWatch(check func(string) bool) *lineWatch {
	return &lineWatch{check: check, hit: make(chan struct{})}
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	n, _ := w.buf.Write(p)
	s := w.buf.String()
	w.mu.Unlock()
	if w.check != nil && w.check(s) {
		w.once.Do(func() { close(w.hit) })
	}
	return n, nil
}

func (w *lineWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// jsonEvents parses output as the system tests do: every line that is JSON is an event,
// anything else is skipped.
func jsonEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(out, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			if _, ok := m["name"].(string); !ok {
				t.Fatalf("event without a name: %s", line)
			}
			evs = append(evs, m)
		}
	}
	return evs
}

type tp struct {
	topic     string
	partition int
}

// producerTracker is verifiable_producer.py's _worker: acked values, last acked offsets.
type producerTracker struct {
	acked, notAcked []string
	lastOffset      map[tp]int64
	keyPartition    map[string]int
	shutdown        bool
	toolData        map[string]any
}

func trackProducer(t *testing.T, evs []map[string]any) *producerTracker {
	t.Helper()
	pt := &producerTracker{lastOffset: map[tp]int64{}, keyPartition: map[string]int{}}
	if len(evs) == 0 || evs[0]["name"] != "startup_complete" {
		t.Fatalf("first event is not startup_complete: %v", evs)
	}
	for _, e := range evs {
		switch e["name"] {
		case "producer_send_error":
			pt.notAcked = append(pt.notAcked, e["value"].(string))
		case "producer_send_success":
			if pt.shutdown {
				t.Fatal("send success after shutdown_complete")
			}
			p := tp{e["topic"].(string), int(e["partition"].(float64))}
			off := int64(e["offset"].(float64))
			if last, ok := pt.lastOffset[p]; ok && off <= last {
				t.Fatalf("%v: offset %d after %d", p, off, last)
			}
			pt.lastOffset[p] = off
			pt.acked = append(pt.acked, e["value"].(string))
			if k, ok := e["key"].(string); ok {
				if prev, seen := pt.keyPartition[k]; seen && prev != p.partition {
					t.Fatalf("key %s in partitions %d and %d", k, prev, p.partition)
				}
				pt.keyPartition[k] = p.partition
			}
		case "shutdown_complete":
			pt.shutdown = true
		case "tool_data":
			if !pt.shutdown {
				t.Fatal("tool_data before shutdown_complete")
			}
			pt.toolData = e
		}
	}
	if pt.toolData == nil {
		t.Fatal("no tool_data event")
	}
	return pt
}

// consumerTracker is verifiable_consumer.py's ConsumerEventHandler, assertions included.
type consumerTracker struct {
	state                   string
	assignment              map[tp]bool
	position, committed     map[tp]int64
	totalConsumed           int64
	revoked, assigned       int
	values                  []string
	shutdownAfterRevocation bool
}

func trackConsumer(t *testing.T, evs []map[string]any) *consumerTracker {
	t.Helper()
	c := &consumerTracker{position: map[tp]int64{}, committed: map[tp]int64{}}
	partitions := func(e map[string]any) []map[string]any {
		var out []map[string]any
		for _, p := range e["partitions"].([]any) {
			out = append(out, p.(map[string]any))
		}
		return out
	}
	key := func(m map[string]any) tp { return tp{m["topic"].(string), int(m["partition"].(float64))} }
	lastName := ""
	for _, e := range evs {
		switch e["name"] {
		case "startup_complete":
			c.state = "Started"
		case "partitions_revoked":
			c.revoked++
			c.state = "Rebalancing"
			c.position = map[tp]int64{}
		case "partitions_assigned":
			c.assigned++
			c.state = "Joined"
			c.assignment = map[tp]bool{}
			for _, p := range partitions(e) {
				c.assignment[key(p)] = true
			}
		case "records_consumed":
			if c.state != "Joined" {
				t.Fatalf("Consumed records should only be received when joined (current state: %s)", c.state)
			}
			for _, b := range partitions(e) {
				p := key(b)
				minOff, maxOff := int64(b["minOffset"].(float64)), int64(b["maxOffset"].(float64))
				if !c.assignment[p] {
					t.Fatalf("Consumed records for partition %v which is not assigned", p)
				}
				if pos, ok := c.position[p]; ok && pos != minOff {
					t.Fatalf("Consumed from an unexpected offset (%d, %d) for partition %v", pos, minOff, p)
				}
				if n := int64(b["count"].(float64)); n != maxOff-minOff+1 {
					t.Fatalf("%v: count %d for offsets %d..%d", p, n, minOff, maxOff)
				}
				c.position[p] = maxOff + 1
			}
			c.totalConsumed += int64(e["count"].(float64))
		case "record_data":
			c.values = append(c.values, e["value"].(string))
		case "offsets_committed":
			if e["success"] != true {
				t.Fatalf("commit failed: %v", e)
			}
			for _, o := range e["offsets"].([]any) {
				m := o.(map[string]any)
				p, off := key(m), int64(m["offset"].(float64))
				if !c.assignment[p] {
					t.Fatalf("Committed offsets for partition %v not assigned", p)
				}
				if pos, ok := c.position[p]; !ok || pos < off {
					t.Fatalf("The committed offset %d was greater than the current position %d for partition %v", off, pos, p)
				}
				c.committed[p] = off
			}
		case "shutdown_complete":
			c.shutdownAfterRevocation = lastName == "partitions_revoked"
			c.state = "Dead"
		}
		lastName = e["name"].(string)
	}
	return c
}

func TestVerifiableArgErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"verifiable-producer"}, 0, "usage: verifiable-producer"},
		{[]string{"verifiable-producer", "--bootstrap-server", "x:1"}, 1, "verifiable-producer: error: argument --topic is required"},
		{[]string{"verifiable-producer", "--topic", "t"}, 1, "one of the arguments --bootstrap-server --broker-list is required"},
		{[]string{"verifiable-producer", "--topic", "t", "--broker-list", "x:1", "--acks", "2"}, 1, "argument --acks: invalid choice: '2' (choose from {0,1,-1})"},
		{[]string{"verifiable-producer", "--topic", "t", "--broker-list", "x:1", "--bootstrap-server", "x:1"}, 1, "not allowed with argument"},
		{[]string{"verifiable-producer", "--topic", "t", "--broker-list", "x:1", "--nope"}, 1, "unrecognized arguments: 'nope'"},
		{[]string{"verifiable-producer", "--topic", "t", "--broker-list", "x:1", "--max-messages", "many"}, 1,
			`verifiable-producer: error: argument --max-messages: could not convert 'many' to Integer (For input string: "many")`},
		{[]string{"verifiable-consumer"}, 0, "usage: verifiable-consumer"},
		{[]string{"verifiable-consumer", "--bootstrap-server", "x:1", "--topic", "t"}, 1, "argument --group-id is required"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(tt.args, nil, &out, &errb)
		if code != tt.code || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d stderr %q, want %d %q", tt.args, code, errb.String(), tt.code, tt.want)
		}
	}
	if _, _, _, err := verifiableConsumerClientOpts(map[string]string{"partition.assignment.strategy": "com.example.Mine"}); err == nil {
		t.Error("unknown assignor accepted")
	}
	for classes, want := range map[string]bool{
		"org.apache.kafka.clients.consumer.CooperativeStickyAssignor":                                                 true,
		"org.apache.kafka.clients.consumer.RangeAssignor,org.apache.kafka.clients.consumer.CooperativeStickyAssignor": false,
		"org.apache.kafka.clients.consumer.RangeAssignor":                                                             false,
	} {
		if _, coop, err := kgoBalancers(classes); err != nil || coop != want {
			t.Errorf("%s: cooperative %v, %v", classes, coop, err)
		}
	}
}

// The producer's and consumer's events, parsed as Kafka's system tests parse them, account
// for every record: what the producer acknowledged is what the group consumed and committed.
func TestVerifiableProducerConsumer(t *testing.T) {
	t.Parallel()
	addrs, _ := startTxnBrokers(t, 1)
	bootstrap := addrs[0]
	const topic, n = "verifiable", 300
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	// A bounded run: --max-messages, keys and a value prefix.
	var out, errb bytes.Buffer
	code := dispatch([]string{"verifiable-producer", "--topic", topic, "--bootstrap-server", bootstrap,
		"--max-messages", strconv.Itoa(n), "--value-prefix", "7", "--repeating-keys", "5", "--acks", "-1"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("producer exit %d: %s", code, errb.String())
	}
	line := regexp.MustCompile(`(?m)^\{"timestamp":\d+,"name":"producer_send_success","key":"\d","value":"7\.\d+","topic":"verifiable","partition":\d,"offset":\d+\}$`)
	if got := len(line.FindAllString(out.String(), -1)); got != n {
		t.Fatalf("%d success lines in Kafka's field order, want %d:\n%s", got, n, out.String())
	}
	pt := trackProducer(t, jsonEvents(t, out.String()))
	if len(pt.acked) != n || len(pt.notAcked) != 0 {
		t.Fatalf("acked %d, not acked %d", len(pt.acked), len(pt.notAcked))
	}
	for _, v := range pt.acked {
		if !strings.HasPrefix(v, "7.") {
			t.Fatalf("value %q", v)
		}
	}
	if len(pt.keyPartition) != 5 {
		t.Fatalf("keys %v, want 0..4", pt.keyPartition)
	}
	td := pt.toolData
	if td["sent"] != float64(n) || td["acked"] != float64(n) || td["target_throughput"] != float64(-1) || td["avg_throughput"].(float64) <= 0 {
		t.Fatalf("tool_data %v", td)
	}

	// An unbounded, throttled run stopped as by a signal: what was sent is flushed and acked.
	runCtx, cancelRun := context.WithCancel(ctx)
	w := newLineWatch(func(s string) bool { return strings.Count(s, "producer_send_success") >= 20 })
	done := make(chan int)
	go func() {
		o, err := parseVerifiableProducerArgs([]string{"--topic", topic, "--broker-list", bootstrap, "--throughput", "200", "--value-prefix", "8"})
		if err != nil {
			t.Error(err)
			done <- 1
			return
		}
		done <- verifiableProduce(runCtx, o, w, io.Discard)
	}()
	select {
	case <-w.hit:
	case <-ctx.Done():
		t.Fatal("unbounded producer never acknowledged 20 records")
	}
	cancelRun()
	if code := <-done; code != 0 {
		t.Fatalf("unbounded producer exit %d", code)
	}
	pt2 := trackProducer(t, jsonEvents(t, w.String()))
	if sent, acked := pt2.toolData["sent"].(float64), pt2.toolData["acked"].(float64); sent != acked || int(acked) != len(pt2.acked) || acked < 20 {
		t.Fatalf("after stop: tool_data %v, %d success events", pt2.toolData, len(pt2.acked))
	}
	total := n + len(pt2.acked)
	want := map[string]bool{}
	for _, v := range append(pt.acked, pt2.acked...) {
		want[v] = true
	}
	ends := map[tp]int64{}
	for p, off := range pt.lastOffset {
		ends[p] = off + 1
	}
	for p, off := range pt2.lastOffset {
		ends[p] = max(ends[p], off+1)
	}

	// The consumer reads everything, committing after each poll, until stopped.
	runCtx, cancelRun = context.WithCancel(ctx)
	defer cancelRun()
	var consumed int64
	cw := newLineWatch(func(s string) bool {
		consumed = 0
		for _, e := range strings.Split(s, "\n") {
			var m struct {
				Name  string `json:"name"`
				Count int64  `json:"count"`
			}
			if json.Unmarshal([]byte(e), &m) == nil && m.Name == "records_consumed" {
				consumed += m.Count
			}
		}
		return consumed >= int64(total) && strings.HasSuffix(s, "}\n") && strings.Contains(s[strings.LastIndex(s[:len(s)-1], "\n")+1:], "offsets_committed")
	})
	go func() {
		o, err := parseVerifiableConsumerArgs([]string{"--group-id", "vgroup", "--topic", topic, "--bootstrap-server", bootstrap, "--verbose", "--session-timeout", "10000"})
		if err != nil {
			t.Error(err)
			done <- 1
			return
		}
		done <- verifiableConsume(runCtx, o, cw, io.Discard)
	}()
	select {
	case <-cw.hit:
	case <-ctx.Done():
		t.Fatalf("consumer never consumed %d records:\n%s", total, cw.String())
	}
	cancelRun()
	if code := <-done; code != 0 {
		t.Fatalf("consumer exit %d", code)
	}
	ct := trackConsumer(t, jsonEvents(t, cw.String()))
	if ct.totalConsumed != int64(total) || len(ct.values) != total {
		t.Fatalf("consumed %d (%d record_data), want %d", ct.totalConsumed, len(ct.values), total)
	}
	for _, v := range ct.values {
		if !want[v] {
			t.Fatalf("consumed %q, never acknowledged", v)
		}
		delete(want, v)
	}
	if ct.state != "Dead" || !ct.shutdownAfterRevocation || ct.assigned != 1 || ct.revoked != 2 {
		t.Fatalf("state %s, revoked before shutdown %v, %d assigned, %d revoked events", ct.state, ct.shutdownAfterRevocation, ct.assigned, ct.revoked)
	}
	for p, end := range ends {
		if ct.committed[p] != end {
			t.Fatalf("%v: committed %d, want %d (%v)", p, ct.committed[p], end, ct.committed)
		}
	}
	fetched, err := adm.FetchOffsets(ctx, "vgroup")
	if err != nil {
		t.Fatal(err)
	}
	for p, end := range ends {
		if o, ok := fetched.Lookup(p.topic, int32(p.partition)); !ok || o.At != end {
			t.Fatalf("group offset of %v: %+v, want %d", p, o, end)
		}
	}

	// --max-messages ends the consumer by itself; with auto-commit there are no commit events.
	out.Reset()
	errb.Reset()
	code = dispatch([]string{"verifiable-consumer", "--group-id", "vgroup2", "--topic", topic, "--broker-list", bootstrap,
		"--max-messages", "10", "--enable-autocommit", "--assignment-strategy", "org.apache.kafka.clients.consumer.RoundRobinAssignor"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("consumer exit %d: %s", code, errb.String())
	}
	ct = trackConsumer(t, jsonEvents(t, out.String()))
	if ct.totalConsumed < 10 || len(ct.committed) != 0 || ct.state != "Dead" {
		t.Fatalf("consumed %d, commits %v, state %s:\n%s", ct.totalConsumed, ct.committed, ct.state, out.String())
	}
	if f, err := adm.FetchOffsets(ctx, "vgroup2"); err != nil || len(f.Offsets()) == 0 {
		t.Fatalf("auto-commit committed nothing: %v", err)
	}
	// The cooperative protocol revokes nothing when a member first joins.
	out.Reset()
	code = dispatch([]string{"verifiable-consumer", "--group-id", "vgroup4", "--topic", topic, "--broker-list", bootstrap,
		"--max-messages", "5", "--assignment-strategy", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}, nil, &out, &errb)
	evs := jsonEvents(t, out.String())
	if code != 0 || len(evs) < 3 || evs[1]["name"] != "partitions_assigned" {
		t.Fatalf("cooperative member: exit %d\n%s", code, out.String())
	}
	if ct = trackConsumer(t, evs); ct.totalConsumed < 5 || len(ct.committed) == 0 {
		t.Fatalf("cooperative member consumed %d, committed %v", ct.totalConsumed, ct.committed)
	}

	// Two members: the second joins, the group rebalances (eager), and the new records are
	// split between them, each member's events passing the system test's checks.
	props := writeProps(t, "heartbeat.interval.ms=200\nclient.id=verifiable-two\n")
	consumedIn := func(s string) int64 {
		var n int64
		for _, e := range strings.Split(s, "\n") {
			var m struct {
				Name  string `json:"name"`
				Count int64  `json:"count"`
			}
			if json.Unmarshal([]byte(e), &m) == nil && m.Name == "records_consumed" {
				n += m.Count
			}
		}
		return n
	}
	startMember := func(w *lineWatch) chan int {
		ch := make(chan int, 1)
		go func() {
			o, err := parseVerifiableConsumerArgs([]string{"--group-id", "vgroup3", "--topic", topic, "--bootstrap-server", bootstrap,
				"--session-timeout", "10000", "--consumer.config", props})
			if err != nil {
				t.Error(err)
				ch <- 1
				return
			}
			ch <- verifiableConsume(runCtx, o, w, io.Discard)
		}()
		return ch
	}
	runCtx, cancelRun = context.WithCancel(ctx)
	defer cancelRun()
	wa := newLineWatch(func(s string) bool { return strings.Count(s, "partitions_assigned") >= 2 })
	wb := newLineWatch(func(s string) bool { return strings.Contains(s, "partitions_assigned") })
	doneA := startMember(wa)
	waitLine := func(w *lineWatch, what string) {
		t.Helper()
		for !strings.Contains(w.String(), what) {
			select {
			case <-ctx.Done():
				t.Fatalf("no %s:\n%s", what, w.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitLine(wa, "partitions_assigned")
	doneB := startMember(wb)
	for _, w := range []*lineWatch{wa, wb} {
		select {
		case <-w.hit:
		case <-ctx.Done():
			t.Fatalf("no rebalance:\n%s", w.String())
		}
	}
	pc, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	const more = 60
	for i := 0; i < more; i++ {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte("more-" + strconv.Itoa(i))}
		if err := pc.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for consumedIn(wa.String())+consumedIn(wb.String()) < int64(total+more) {
		select {
		case <-ctx.Done():
			t.Fatalf("members consumed %d and %d of %d", consumedIn(wa.String()), consumedIn(wb.String()), total+more)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancelRun()
	if a, b := <-doneA, <-doneB; a != 0 || b != 0 {
		t.Fatalf("member exits %d %d", a, b)
	}
	ca, cb := trackConsumer(t, jsonEvents(t, wa.String())), trackConsumer(t, jsonEvents(t, wb.String()))
	if ca.assigned != 2 || cb.assigned != 1 || len(ca.assignment)+len(cb.assignment) != 3 || cb.totalConsumed == 0 {
		t.Fatalf("members: %d/%d assignments, final %v and %v, b consumed %d\n%s\n%s", ca.assigned, cb.assigned,
			ca.assignment, cb.assignment, cb.totalConsumed, wa.String(), wb.String())
	}
	for p := range ca.assignment {
		if cb.assignment[p] {
			t.Fatalf("%v assigned to both members", p)
		}
	}
}
