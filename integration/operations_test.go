package integration

// Operator workflows of issue 6 against separate broker processes on a real ZooKeeper:
// a retention change through `samsa configs` reaching every replica without a restart, a
// partition reassignment {1,2} → {2,3} under a running sarama acks=all producer, `samsa
// leader-election`, and deleting a topic while one replica's broker is down, then
// recreating it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// segmentFiles lists the .log segment files of a partition in a broker's log dir.
func segmentFiles(b *Broker, topic string, p int32) []string {
	m, _ := filepath.Glob(filepath.Join(b.Dir, fmt.Sprintf("%s-%d", topic, p), "*.log"))
	return m
}

func TestOpsConfigRetention(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: map[string]string{
		"log.retention.check.interval.ms": "200", "log.segment.delete.delay.ms": "0"}})
	boot := strings.Join(c.Bootstrap(), ",")
	if out, err := samsaCmd(t, "", "topics", "--bootstrap-server", boot, "--create", "--topic", "ret",
		"--partitions", "1", "--replication-factor", "3", "--config", "segment.bytes=1024"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	waitLeaders(t, c, "ret", 1)
	kgoProduce(t, c, "ret", 300, kgo.NoCompression(), true)
	for _, b := range c.Brokers {
		waitFor(t, 30*time.Second, func() error {
			if n := len(segmentFiles(b, "ret", 0)); n < 5 {
				return fmt.Errorf("broker %d has %d segments", b.ID, n)
			}
			return nil
		})
	}
	out, err := samsaCmd(t, "", "configs", "--bootstrap-server", boot, "--entity-type", "topics", "--entity-name", "ret",
		"--alter", "--add-config", "retention.ms=1,cleanup.policy=[delete]")
	if err != nil || !strings.Contains(out, "Completed updating config for topic ret.") {
		t.Fatalf("configs --alter: %v\n%s", err, out)
	}
	// Every replica applies it to its live log: old segments go without a restart.
	for _, b := range c.Brokers {
		waitFor(t, 30*time.Second, func() error {
			if n := len(segmentFiles(b, "ret", 0)); n != 1 {
				return fmt.Errorf("broker %d still has %d segments", b.ID, n)
			}
			return nil
		})
	}
	out, err = samsaStdout(t, "configs", "--bootstrap-server", boot, "--entity-type", "topics", "--entity-name", "ret", "--describe")
	if err != nil || !strings.Contains(out, "Dynamic configs for topic ret are:") || !strings.Contains(out, "retention.ms=1 ") ||
		!strings.Contains(out, "segment.bytes=1024 ") {
		t.Fatalf("configs --describe: %v\n%s", err, out)
	}
	out, err = samsaCmd(t, "", "configs", "--bootstrap-server", boot, "--entity-type", "topics", "--entity-name", "ret",
		"--alter", "--delete-config", "retention.ms")
	if err != nil {
		t.Fatalf("configs --delete-config: %v\n%s", err, out)
	}
	data, _, _ := c.ZKGet("/config/topics/ret")
	if bytes.Contains(data, []byte("retention.ms")) {
		t.Fatalf("retention.ms still set: %s", data)
	}
	// Bad input: an unknown key and an unknown topic are refused.
	if out, err := samsaCmd(t, "", "configs", "--bootstrap-server", boot, "--entity-type", "topics", "--entity-name", "ret",
		"--alter", "--add-config", "retention.msx=1"); err == nil {
		t.Fatalf("unknown key accepted:\n%s", out)
	}
	if out, err := samsaCmd(t, "", "configs", "--bootstrap-server", boot, "--entity-type", "topics", "--entity-name", "nope",
		"--alter", "--add-config", "retention.ms=1"); err == nil {
		t.Fatalf("unknown topic accepted:\n%s", out)
	}
}

func TestOpsReassignUnderLoad(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 4, Process: true})
	boot := strings.Join(c.Bootstrap(), ",")
	if out, err := samsaCmd(t, "", "topics", "--bootstrap-server", boot, "--create", "--topic", "mv",
		"--replica-assignment", "1:2"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	waitLeaders(t, c, "mv", 1)

	prod := startOpsProducer(t, c, "mv", "samsa-it-reassign", 20, 0)
	prod.waitAcked(t, 200, 20*time.Second)

	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[2,3],"log_dirs":["any","any"]}]}`), 0o644)
	out, err := samsaStdout(t, "reassign-partitions", "--bootstrap-server", boot, "--reassignment-json-file", plan, "--execute")
	if err != nil || !strings.Contains(out, "Successfully started partition reassignment for mv-0") ||
		!strings.Contains(out, `{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`) {
		t.Fatalf("--execute: %v\n%s", err, out)
	}
	waitFor(t, 60*time.Second, func() error {
		out, err := samsaStdout(t, "reassign-partitions", "--bootstrap-server", boot, "--reassignment-json-file", plan, "--verify")
		if err != nil || !strings.Contains(out, "Reassignment of partition mv-0 is completed.") {
			return fmt.Errorf("--verify: %v: %s", err, out)
		}
		return nil
	})
	// Keep producing a little after the move, then stop.
	prod.waitAcked(t, prod.count()+100, 20*time.Second)
	acked := prod.close(t)
	data, _, _ := c.ZKGet("/brokers/topics/mv")
	var tz struct {
		Partitions map[string][]int32 `json:"partitions"`
		Adding     map[string][]int32 `json:"adding_replicas"`
		Removing   map[string][]int32 `json:"removing_replicas"`
	}
	if err := json.Unmarshal(data, &tz); err != nil || fmt.Sprint(tz.Partitions["0"]) != "[2 3]" || len(tz.Adding) != 0 || len(tz.Removing) != 0 {
		t.Fatalf("topic znode %s (%v)", data, err)
	}
	checkAcked(t, c, "mv", acked)
	// The replicas match byte for byte, and broker 1's copy is gone.
	waitFor(t, 30*time.Second, func() error {
		a, b := readSegments(c.Broker(2), "mv", 0), readSegments(c.Broker(3), "mv", 0)
		if len(a) == 0 || !bytes.Equal(a, b) {
			return fmt.Errorf("replicas differ: %d vs %d bytes", len(a), len(b))
		}
		if n := len(segmentFiles(c.Broker(1), "mv", 0)); n != 0 {
			return fmt.Errorf("broker 1 still has %d segments", n)
		}
		return nil
	})
	if out, err := samsaStdout(t, "reassign-partitions", "--bootstrap-server", boot, "--list"); err != nil ||
		!strings.Contains(out, "No partition reassignments found.") {
		t.Fatalf("--list: %v\n%s", err, out)
	}
	topicsJSON := filepath.Join(dir, "topics.json")
	os.WriteFile(topicsJSON, []byte(`{"version":1,"topics":[{"topic":"mv"}]}`), 0o644)
	if out, err := samsaStdout(t, "reassign-partitions", "--bootstrap-server", boot, "--generate",
		"--topics-to-move-json-file", topicsJSON, "--broker-list", "0,1"); err != nil ||
		!strings.Contains(out, "Proposed partition reassignment configuration") || !strings.Contains(out, `"topic":"mv"`) {
		t.Fatalf("--generate: %v\n%s", err, out)
	}
	// Bad input through the tool: a dead broker id is INVALID_REPLICA_ASSIGNMENT.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[2,9]}]}`), 0o644)
	if out, err := samsaCmd(t, "", "reassign-partitions", "--bootstrap-server", boot, "--reassignment-json-file", bad, "--execute"); err == nil ||
		!strings.Contains(out, "brokers that are not alive") {
		t.Fatalf("bad reassignment: %v\n%s", err, out)
	}

	// leader-election: 3 leads mv-0 after a preferred... make 3 leader via unclean-free
	// preferred election on a reordered assignment.
	os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[3,2]}]}`), 0o644)
	if out, err := samsaStdout(t, "reassign-partitions", "--bootstrap-server", boot, "--reassignment-json-file", plan, "--execute"); err != nil {
		t.Fatalf("reorder: %v\n%s", err, out)
	}
	waitFor(t, 30*time.Second, func() error {
		out, err := samsaStdout(t, "leader-election", "--bootstrap-server", boot, "--election-type", "preferred", "--all-topic-partitions")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "mv-0") {
			return fmt.Errorf("mv-0 not elected: %s", out)
		}
		return nil
	})
	waitFor(t, 10*time.Second, func() error {
		data, _, _ := c.ZKGet("/brokers/topics/mv/partitions/0/state")
		if !bytes.Contains(data, []byte(`"leader":3`)) {
			return fmt.Errorf("state %s", data)
		}
		return nil
	})
}

// readSegments concatenates a partition's segment files.
func readSegments(b *Broker, topic string, p int32) []byte {
	var all []byte
	for _, f := range segmentFiles(b, topic, p) {
		d, _ := os.ReadFile(f)
		all = append(all, d...)
	}
	return all
}

func TestOpsDeleteWhileDownThenRecreate(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: map[string]string{"log.segment.delete.delay.ms": "0"}})
	createTopic(t, c, "dd", 1, 3, nil)
	kgoProduce(t, c, "dd", 20, kgo.NoCompression(), false)
	oldID, _, _ := c.ZKGet("/brokers/topics/dd")
	down := c.Broker(2)
	waitFor(t, 10*time.Second, func() error {
		if len(segmentFiles(down, "dd", 0)) == 0 {
			return fmt.Errorf("no replica on broker 2 yet")
		}
		return nil
	})
	down.Kill()
	waitFor(t, 30*time.Second, func() error {
		if _, _, ok := c.ZKGet("/brokers/ids/2"); ok {
			return fmt.Errorf("broker 2 still registered")
		}
		return nil
	})
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames, req.TimeoutMillis = []string{"dd"}, 2000
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("dd")
	req.Topics = append(req.Topics, dt)
	ctrl := c.WaitController(20 * time.Second)
	_, _ = requestTo[*kmsg.DeleteTopicsResponse](t, c.Broker(ctrl).Addr(), req) // times out while broker 2 is down
	time.Sleep(2 * time.Second)
	if _, _, ok := c.ZKGet("/brokers/topics/dd"); !ok {
		t.Fatal("topic deleted although a replica's broker is down")
	}
	if _, _, ok := c.ZKGet("/admin/delete_topics/dd"); !ok {
		t.Fatal("deletion marker missing")
	}
	down.Restart()
	waitFor(t, 60*time.Second, func() error {
		for _, p := range []string{"/brokers/topics/dd", "/admin/delete_topics/dd", "/config/topics/dd"} {
			if _, _, ok := c.ZKGet(p); ok {
				return fmt.Errorf("%s still exists", p)
			}
		}
		for _, b := range c.Brokers {
			if m, _ := filepath.Glob(filepath.Join(b.Dir, "dd-0*")); len(m) > 0 {
				return fmt.Errorf("broker %d still has %v", b.ID, m)
			}
		}
		return nil
	})
	createTopic(t, c, "dd", 1, 3, nil)
	newID, _, _ := c.ZKGet("/brokers/topics/dd")
	var a, b struct {
		TopicID string `json:"topic_id"`
	}
	json.Unmarshal(oldID, &a)
	json.Unmarshal(newID, &b)
	if a.TopicID == "" || a.TopicID == b.TopicID {
		t.Fatalf("topic id not renewed: %q → %q", a.TopicID, b.TopicID)
	}
	sent := kgoProduce(t, c, "dd", 5, kgo.NoCompression(), false)
	got := kgoConsume(t, c, "dd", 5)
	checkRecords(t, sent, got)

	// Partition growth by a direct edit of /brokers/topics/dd, as old tools did.
	data, stat, _ := c.ZKGet("/brokers/topics/dd")
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	raw["partitions"].(map[string]any)["1"] = []int32{1, 2, 0}
	grown, _ := json.Marshal(raw)
	if _, err := c.ZK().Set(c.Path("/brokers/topics/dd"), grown, stat.Version); err != nil {
		t.Fatal(err)
	}
	waitLeaders(t, c, "dd", 2)
	newData, _, _ := c.ZKGet("/brokers/topics/dd")
	var after struct {
		TopicID string `json:"topic_id"`
	}
	json.Unmarshal(newData, &after)
	if after.TopicID != b.TopicID {
		t.Fatalf("topic id changed by partition growth: %q → %q", b.TopicID, after.TopicID)
	}
}

// partitionLeaders reads the leader of each partition of topic from its state znode.
func partitionLeaders(c *Cluster, topic string, n int) (map[int]int32, error) {
	out := map[int]int32{}
	for p := 0; p < n; p++ {
		data, _, ok := c.ZKGet(fmt.Sprintf("/brokers/topics/%s/partitions/%d/state", topic, p))
		if !ok {
			return nil, fmt.Errorf("no state for %s-%d", topic, p)
		}
		var st struct {
			Leader int32 `json:"leader"`
		}
		if err := json.Unmarshal(data, &st); err != nil {
			return nil, err
		}
		out[p] = st.Leader
	}
	return out, nil
}

func TestOpsControlledShutdownAndPreferredReturn(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: map[string]string{
		"leader.imbalance.check.interval.seconds": "1"}})
	const parts = 6
	createTopic(t, c, "cs", parts, 3, nil)
	ctrl := c.WaitController(20 * time.Second)
	victim := c.Brokers[(int(ctrl)+1)%3]
	var assignment struct {
		Partitions map[string][]int32 `json:"partitions"`
	}
	data, _, _ := c.ZKGet("/brokers/topics/cs")
	json.Unmarshal(data, &assignment)
	preferred := map[int]int32{}
	led := 0
	for p := 0; p < parts; p++ {
		preferred[p] = assignment.Partitions[fmt.Sprint(p)][0]
		if preferred[p] == victim.ID {
			led++
		}
	}
	if led != parts/3 {
		t.Fatalf("broker %d is preferred for %d of %d partitions", victim.ID, led, parts)
	}

	prod := startOpsProducer(t, c, "cs", "samsa-it-controlled-shutdown", 30, time.Second)
	prod.waitAcked(t, 100, 20*time.Second)

	// SIGTERM: leadership must have moved while the process still runs.
	var movedAt time.Time
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		for i := 0; i < 2000; i++ {
			leaders, err := partitionLeaders(c, "cs", parts)
			if err == nil {
				moved := true
				for _, l := range leaders {
					if l == victim.ID {
						moved = false
					}
				}
				if moved {
					movedAt = time.Now()
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	victim.Stop(60 * time.Second)
	exitedAt := time.Now()
	<-pollDone
	if movedAt.IsZero() || !movedAt.Before(exitedAt) {
		t.Fatalf("leadership moved at %v, process exited at %v", movedAt, exitedAt)
	}
	prod.waitAcked(t, prod.count()+100, 20*time.Second)

	// The broker returns: the auto rebalance gives it its preferred leaderships back.
	victim.Restart()
	waitFor(t, 60*time.Second, func() error {
		leaders, err := partitionLeaders(c, "cs", parts)
		if err != nil {
			return err
		}
		for p, l := range leaders {
			if l != preferred[p] {
				return fmt.Errorf("cs-%d led by %d, preferred %d", p, l, preferred[p])
			}
		}
		return nil
	})
	checkAcked(t, c, "cs", prod.close(t))
}

// opsProducer sends test records one at a time through a sarama SyncProducer (acks=all)
// until closed or until a send fails after its retries, keeping every acknowledged record.
type opsProducer struct {
	p          sarama.SyncProducer
	stop, done chan struct{}
	closeOnce  sync.Once

	mu    sync.Mutex
	acked []record
	err   error // the first failed send; the producer stops there
}

// startOpsProducer starts producing to topic with retries retries 100 ms apart and, if
// metadataRefresh is not 0, that metadata refresh interval. The test's end stops it.
func startOpsProducer(t *testing.T, c *Cluster, topic, clientID string, retries int, metadataRefresh time.Duration) *opsProducer {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_7_0_0
	cfg.ClientID = clientID
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = retries
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	if metadataRefresh != 0 {
		cfg.Metadata.RefreshFrequency = metadataRefresh
	}
	p, err := sarama.NewSyncProducer(c.Bootstrap(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	op := &opsProducer{p: p, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(op.done)
		base := time.Now()
		for i := 0; ; i++ {
			select {
			case <-op.stop:
				return
			default:
			}
			r := testRecord("sarama", i, base)
			part, off, err := p.SendMessage(saramaMessage(topic, r, i))
			op.mu.Lock()
			if err != nil {
				op.err = fmt.Errorf("record %d: %w", i, err)
				op.mu.Unlock()
				return
			}
			r.Partition, r.Offset = part, off
			op.acked = append(op.acked, r)
			op.mu.Unlock()
		}
	}()
	t.Cleanup(op.stopProducing)
	return op
}

func (op *opsProducer) count() int {
	op.mu.Lock()
	defer op.mu.Unlock()
	return len(op.acked)
}

// waitAcked waits until n records are acknowledged; a failed send fails the test.
func (op *opsProducer) waitAcked(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, func() error {
		op.mu.Lock()
		defer op.mu.Unlock()
		if op.err != nil || len(op.acked) >= n {
			return nil
		}
		return fmt.Errorf("%d records acked, waiting for %d", len(op.acked), n)
	})
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.err != nil {
		t.Fatalf("sarama acks=all producer saw a non-retriable error: %v", op.err)
	}
}

func (op *opsProducer) stopProducing() {
	op.closeOnce.Do(func() {
		close(op.stop)
		<-op.done
		op.p.Close()
	})
}

// close stops producing and returns the acknowledged records; a failed send fails the test.
func (op *opsProducer) close(t *testing.T) []record {
	t.Helper()
	op.stopProducing()
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.err != nil {
		t.Fatalf("sarama acks=all producer saw a non-retriable error: %v", op.err)
	}
	return op.acked
}

// checkAcked reads topic from the start until every acknowledged record's offset is covered
// and checks each one is there, at its offset, with its value. A non-idempotent producer may
// also have written records it got no acknowledgement for (retried after a leader change,
// as with Kafka); those are allowed.
func checkAcked(t *testing.T, c *Cluster, topic string, acked []record) {
	t.Helper()
	want := map[int32]map[int64]record{}
	need := map[int32]int64{}
	for _, r := range acked {
		if want[r.Partition] == nil {
			want[r.Partition] = map[int64]record{}
		}
		want[r.Partition][r.Offset] = r
		need[r.Partition] = max(need[r.Partition], r.Offset)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithLogger(kgoTestLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seen := map[int32]map[int64][]byte{}
	covered := func() bool {
		for p, off := range need {
			if _, ok := seen[p][off]; !ok {
				return false
			}
		}
		return true
	}
	for !covered() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("acknowledged records not all readable after 2m")
		}
		fs.EachRecord(func(r *kgo.Record) {
			if seen[r.Partition] == nil {
				seen[r.Partition] = map[int64][]byte{}
			}
			seen[r.Partition][r.Offset] = r.Value
		})
	}
	extra := 0
	for p, m := range want {
		for off, r := range m {
			v, ok := seen[p][off]
			if !ok || !bytes.Equal(v, r.Value) {
				t.Errorf("%s-%d offset %d: acknowledged %q, read %q (present %v)", topic, p, off, r.Value, v, ok)
			}
		}
		extra += len(seen[p]) - len(m)
	}
	t.Logf("%d acknowledged records all readable; %d unacknowledged extra records (producer retries)", len(acked), extra)
}
