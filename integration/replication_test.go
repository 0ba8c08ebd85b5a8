package integration

// Replication (issue 5) against real broker processes: the kill -9 chaos test, KIP-101/279
// divergence, ISR shrink/expand with SIGSTOP, NOT_ENOUGH_REPLICAS, and (un)clean leader
// election. Helpers here are prefixed repl to keep clear of other files' names.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replAck is one acknowledged record: where the broker said it went.
type replAck struct {
	partition int32
	offset    int64
	value     string
}

// replProducer writes numbered, keyed records until closed, recording each acknowledgment
// (partition, offset, value) in acknowledgment order.
type replProducer struct {
	id    int
	close func() // stops feeding, flushes and waits for every outstanding answer

	mu     sync.Mutex
	acked  []replAck // in acknowledgment order
	failed int
	first  error
}

func (rp *replProducer) ack(a replAck) {
	rp.mu.Lock()
	rp.acked = append(rp.acked, a)
	rp.mu.Unlock()
}

func (rp *replProducer) fail(err error) {
	rp.mu.Lock()
	rp.failed++
	if rp.first == nil {
		rp.first = err
	}
	rp.mu.Unlock()
}

func (rp *replProducer) ackedCount() int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return len(rp.acked)
}

// replValue is record seq of producer id: unique across producers and sequences.
func replValue(id, seq int) string { return fmt.Sprintf("p%d-%09d", id, seq) }

// replKey spreads records over the partitions, 97 keys per producer.
func replKey(seq int) string { return "key-" + strconv.Itoa(seq%97) }

// startReplProducer: a sarama AsyncProducer, acks=all, MaxOpenRequests=1, not idempotent.
func startReplProducer(t *testing.T, c *Cluster, topic string, id int, interval time.Duration) *replProducer {
	return startSaramaReplProducer(t, c, topic, id, interval, false)
}

// startSaramaReplProducer: a sarama AsyncProducer (acks=all, MaxOpenRequests=1, which
// sarama requires for Producer.Idempotent) sending a record every interval.
func startSaramaReplProducer(t *testing.T, c *Cluster, topic string, id int, interval time.Duration, idempotent bool) *replProducer {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_7_0_0
	cfg.ClientID = fmt.Sprintf("repl-producer-%d", id)
	if idempotent {
		cfg.ClientID = fmt.Sprintf("idem-producer-%d", id)
	}
	cfg.Producer.Idempotent = idempotent
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Retry.Max = 40
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Producer.Timeout = 10 * time.Second
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Metadata.RefreshFrequency = 2 * time.Second
	sp, err := sarama.NewAsyncProducer(c.Bootstrap(), cfg)
	if err != nil {
		t.Fatalf("sarama producer (idempotent=%v): %v", idempotent, err)
	}
	rp := &replProducer{id: id}
	stop, feedDone, collDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(feedDone)
		for seq := 0; ; seq++ {
			v := replValue(id, seq)
			m := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(replKey(seq)),
				Value: sarama.StringEncoder(v), Metadata: v}
			select {
			case <-stop:
				return
			case sp.Input() <- m:
			}
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	go func() {
		defer close(collDone)
		succ, errs := sp.Successes(), sp.Errors()
		for succ != nil || errs != nil {
			select {
			case m, ok := <-succ:
				if !ok {
					succ = nil
					continue
				}
				rp.ack(replAck{m.Partition, m.Offset, m.Metadata.(string)})
			case e, ok := <-errs:
				if !ok {
					errs = nil
					continue
				}
				rp.fail(e.Err)
			}
		}
	}()
	rp.close = func() {
		close(stop)
		<-feedDone
		sp.AsyncClose()
		<-collDone
	}
	return rp
}

// replLeader reads partition p's leader and ISR from its state znode.
func replLeader(c *Cluster, topic string, p int32) (int32, []int32, error) {
	st, _, err := c.partitionState(topic, p)
	if err != nil {
		return -1, nil, err
	}
	return st.Leader, st.ISR, nil
}

// replWaitFullISR waits until every partition's ISR (znode) has all n replicas.
func replWaitFullISR(t *testing.T, c *Cluster, topic string, partitions int32, n int, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, func() error {
		for p := range partitions {
			leader, isr, err := replLeader(c, topic, p)
			if err != nil {
				return err
			}
			if leader < 0 || len(isr) != n {
				return fmt.Errorf("%s-%d: leader %d ISR %v", topic, p, leader, isr)
			}
		}
		return nil
	})
}

// replConsumeAll reads every partition from its start up to its current end (the HW) and
// returns partition → offset → value.
func replConsumeAll(t *testing.T, c *Cluster, topic string) map[int32]map[int64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := adminClient(t, c)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset %s-%d: %v", topic, o.Partition, o.Err)
		}
		want[o.Partition] = o.Offset
		offsets[o.Partition] = kgo.NewOffset().AtStart()
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.WithLogger(kgoTestLogger(t)),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32]map[int64]string{}
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume: timed out; read up to %v, want %v", next, want)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if got[r.Partition] == nil {
				got[r.Partition] = map[int64]string{}
			}
			got[r.Partition][r.Offset] = string(r.Value)
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
		})
	}
	return got
}

// replCheckAcked: every acknowledged record is at the offset its ack reported, and per
// producer and partition the acked records appear, by first occurrence, in ack order.
func replCheckAcked(t *testing.T, got map[int32]map[int64]string, producers []*replProducer) int {
	t.Helper()
	first := map[string]int64{} // value → first offset in its partition
	for _, offs := range got {
		for off, v := range offs {
			if f, ok := first[v]; !ok || off < f {
				first[v] = off
			}
		}
	}
	total, missing, misordered := 0, 0, 0
	for _, rp := range producers {
		last := map[int32]int64{}
		for _, a := range rp.acked {
			total++
			if v, ok := got[a.partition][a.offset]; !ok || v != a.value {
				if missing < 10 {
					t.Errorf("acked record %s at %d-%d: found %q (present=%v)", a.value, a.partition, a.offset, v, ok)
				}
				missing++
				continue
			}
			f := first[a.value]
			if l, ok := last[a.partition]; ok && f <= l {
				if misordered < 10 {
					t.Errorf("acked record %s first occurs at %d-%d, not after the previous ack's %d", a.value, a.partition, f, l)
				}
				misordered++
			}
			last[a.partition] = f
		}
	}
	if missing > 0 || misordered > 0 {
		t.Errorf("%d of %d acked records missing or misplaced, %d out of ack order", missing, total, misordered)
	}
	return total
}

// replLogBytes concatenates a replica's segment files of one partition (baseOffset order).
func replLogBytes(dir, topic string, p int32) ([]byte, error) {
	pd := filepath.Join(dir, fmt.Sprintf("%s-%d", topic, p))
	ents, err := os.ReadDir(pd)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []byte
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(pd, n))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// replWaitIdentical waits until every replica of every partition holds the same bytes.
func replWaitIdentical(t *testing.T, c *Cluster, topic string, partitions int32, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, func() error {
		for p := range partitions {
			var ref []byte
			for i, b := range c.Brokers {
				data, err := replLogBytes(b.Dir, topic, p)
				if err != nil {
					return err
				}
				if i == 0 {
					ref = data
				} else if !bytes.Equal(ref, data) {
					return fmt.Errorf("%s-%d: broker %d has %d log bytes, broker 0 has %d", topic, p, b.ID, len(data), len(ref))
				}
			}
		}
		return nil
	})
}

// TestReplicationChaos: 3 brokers, 6 partitions RF 3 min.insync.replicas=2; sarama
// producers (acks=all, MaxOpenRequests=1) write while the test kill -9s the leader of a
// partition, restarts it once the producers made progress, waits for the full ISR, and
// repeats SAMSA_CHAOS_KILLS times (default 3). Then every acked record is at its acked
// offset, in ack order, and all replicas hold identical bytes.
func TestReplicationChaos(t *testing.T) {
	kills := chaosKills(t)
	start := time.Now()
	const topic = "chaos"
	run := runChaos(t, topic, kills, startReplProducer, func(c *Cluster, k int) {
		if k != 0 {
			return
		}
		// With a broker down every partition is under-replicated, and the tool says so.
		var running []string
		for _, b := range c.Brokers {
			if b.Running() {
				running = append(running, b.Addr())
			}
		}
		out, err := samsaStdout(t, "topics", "--bootstrap-server", strings.Join(running, ","), "--describe", "--under-replicated-partitions")
		if n := strings.Count(out, "Topic: "+topic+"\tPartition:"); err != nil || n != chaosPartitions {
			t.Errorf("topics --describe --under-replicated-partitions lists %d partitions of %s, want %d (%v):\n%s", n, topic, chaosPartitions, err, out)
		}
	})
	total := replCheckAcked(t, run.got, run.producers)
	replWaitIdentical(t, run.c, topic, chaosPartitions, 60*time.Second)
	inLog := 0
	for _, m := range run.got {
		inLog += len(m)
	}
	t.Logf("chaos: %d kills, %d records acked (%d failed after retries), %d records in the log, took %v",
		kills, total, run.failed, inLog, time.Since(start).Round(time.Millisecond))
	if total == 0 {
		t.Fatal("nothing acked")
	}
}

// replCreateAssigned creates topic with an explicit assignment (first replica = preferred
// leader) through the controller, and waits for leaders.
func replCreateAssigned(t *testing.T, c *Cluster, topic string, assignment map[int32][]int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, rs := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	for k, v := range configs {
		cc := kmsg.NewCreateTopicsRequestTopicConfig()
		cc.Name, cc.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cc)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	ctl := c.WaitController(30 * time.Second)
	resp, err := requestTo[*kmsg.CreateTopicsResponse](t, c.Broker(ctl).Addr(), req)
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	waitLeaders(t, c, topic, int32(len(assignment)))
}

// replSyncProducer is a sarama SyncProducer with the given acks and retries (0: a broker
// error comes back as is).
func replSyncProducer(t *testing.T, addrs []string, acks sarama.RequiredAcks, retries int) sarama.SyncProducer {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_7_0_0
	cfg.Producer.RequiredAcks = acks
	cfg.Producer.Retry.Max = retries
	cfg.Producer.Retry.Backoff = 200 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond
	cfg.Producer.Timeout = 5 * time.Second
	cfg.Producer.Return.Successes = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// replOthers returns the broker ids other than those given.
func replOthers(c *Cluster, not ...int32) []int32 {
	var out []int32
	for _, b := range c.Brokers {
		if !slices.Contains(not, b.ID) {
			out = append(out, b.ID)
		}
	}
	return out
}

func replWaitISR(t *testing.T, c *Cluster, topic string, p int32, want []int32, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	want = slices.Sorted(slices.Values(want))
	waitFor(t, timeout, func() error {
		_, isr, err := replLeader(c, topic, p)
		if err != nil {
			return err
		}
		if got := slices.Sorted(slices.Values(isr)); !slices.Equal(got, want) {
			return fmt.Errorf("%s-%d ISR %v, want %v", topic, p, isr, want)
		}
		return nil
	})
	return time.Since(start)
}

// TestISRShrinkExpandAndMinISR: replica.lag.time.max.ms=2000, 10 s sessions. A follower
// frozen (SIGSTOP) for 5 s under traffic leaves the ISR (znode and `samsa topics
// --describe --under-replicated-partitions`) and rejoins after SIGCONT. With both followers
// frozen the ISR is the leader alone: acks=all gets NOT_ENOUGH_REPLICAS, acks=1 works.
func TestISRShrinkExpandAndMinISR(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: map[string]string{
		"zookeeper.session.timeout.ms": "10000",
		"replica.lag.time.max.ms":      "2000",
	}})
	ctl := c.WaitController(30 * time.Second)
	fs := replOthers(c, ctl)
	const topic = "lag"
	// The controller leads, so AlterPartition still reaches it with the followers frozen.
	replCreateAssigned(t, c, topic, map[int32][]int32{0: {ctl, fs[0], fs[1]}}, map[string]string{"min.insync.replicas": "2"})
	replWaitISR(t, c, topic, 0, []int32{ctl, fs[0], fs[1]}, 30*time.Second)
	prod := startReplProducer(t, c, topic, 0, 5*time.Millisecond)

	c.Broker(fs[0]).Pause()
	pausedAt := time.Now()
	left := replWaitISR(t, c, topic, 0, []int32{ctl, fs[1]}, 5*time.Second)
	// Metadata (what `topics --describe` prints) shows the shrunk ISR.
	if parts, _, err := metadataPartitions(t, c.Broker(ctl).Addr(), topic); err != nil || len(parts[0].ISR) != 2 {
		t.Errorf("leader's Metadata for %s-0: ISR %v (%v), want 2 replicas", topic, parts[0].ISR, err)
	}
	// The tool's client may pick the frozen broker for a request and wait for it, so it
	// gets until the follower resumes; a timeout is logged, not failed.
	ctx, cancel := context.WithDeadline(context.Background(), pausedAt.Add(4500*time.Millisecond))
	desc, err := exec.CommandContext(ctx, samsaBinary(t), "topics", "--bootstrap-server", c.Broker(ctl).Addr(), "--describe",
		"--under-replicated-partitions").Output()
	cancel()
	switch {
	case ctx.Err() != nil:
		t.Logf("samsa topics --describe --under-replicated-partitions did not answer while a broker was frozen (client waited on it)")
	case err != nil || !strings.Contains(string(desc), "Topic: "+topic):
		t.Errorf("topics --describe --under-replicated-partitions does not list %s: %v\n%s", topic, err, desc)
	default:
		t.Logf("$ samsa topics --describe --under-replicated-partitions\n%s", desc)
	}
	time.Sleep(time.Until(pausedAt.Add(5 * time.Second)))
	c.Broker(fs[0]).Resume()
	back := replWaitISR(t, c, topic, 0, []int32{ctl, fs[0], fs[1]}, 20*time.Second)
	t.Logf("follower %d frozen: left the ISR after %v, rejoined %v after SIGCONT", fs[0], left.Round(time.Millisecond), back.Round(time.Millisecond))
	out, err := samsaStdout(t, "topics", "--bootstrap-server", c.Broker(ctl).Addr(), "--describe", "--under-replicated-partitions")
	if err != nil || strings.Contains(out, "Topic: "+topic) {
		t.Errorf("topics --describe --under-replicated-partitions still lists %s: %v\n%s", topic, err, out)
	}

	// Both followers frozen: ISR = {leader} < min.insync.replicas.
	c.Broker(fs[0]).Pause()
	c.Broker(fs[1]).Pause()
	replWaitISR(t, c, topic, 0, []int32{ctl}, 8*time.Second)
	// Bootstrap from the leader only: a client dialing a frozen broker just waits.
	leaderOnly := []string{c.Broker(ctl).Addr()}
	all := replSyncProducer(t, leaderOnly, sarama.WaitForAll, 0)
	if _, _, err := all.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("x")}); !errors.Is(err, sarama.ErrNotEnoughReplicas) {
		t.Errorf("acks=all with ISR below min.insync.replicas: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	one := replSyncProducer(t, leaderOnly, sarama.WaitForLocal, 0)
	if _, _, err := one.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("y")}); err != nil {
		t.Errorf("acks=1 with ISR below min.insync.replicas: %v", err)
	}
	c.Broker(fs[0]).Resume()
	c.Broker(fs[1]).Resume()
	replWaitISR(t, c, topic, 0, []int32{ctl, fs[0], fs[1]}, 20*time.Second)
	prod.close()
	replCheckAcked(t, replConsumeAll(t, c, topic), []*replProducer{prod})
	replWaitIdentical(t, c, topic, 1, 30*time.Second)
}

// replProduceTo writes n records to topic-0 with acks through a fresh sarama producer and
// returns their values (all must be acknowledged).
func replProduceTo(t *testing.T, c *Cluster, topic string, acks sarama.RequiredAcks, tag string, n int) []replAck {
	t.Helper()
	// Bootstrap from the running brokers that are not frozen... which the harness does not
	// tell; the leader of topic-0 from its znode is enough.
	leader, _, err := replLeader(c, topic, 0)
	if err != nil || leader < 0 {
		t.Fatalf("leader of %s-0: %d %v", topic, leader, err)
	}
	// The leader's own metadata may lag its znode for a moment: wait for it.
	waitFor(t, 10*time.Second, func() error {
		parts, _, err := metadataPartitions(t, c.Broker(leader).Addr(), topic)
		if err != nil {
			return err
		}
		if parts[0].Leader != leader {
			return fmt.Errorf("broker %d's metadata says leader %d", leader, parts[0].Leader)
		}
		return nil
	})
	p := replSyncProducer(t, []string{c.Broker(leader).Addr()}, acks, 5)
	var out []replAck
	for i := range n {
		v := fmt.Sprintf("%s-%04d", tag, i)
		part, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)})
		if err != nil {
			t.Fatalf("produce %s acks=%d: %v", v, acks, err)
		}
		out = append(out, replAck{part, off, v})
	}
	return out
}

// replWaitLeaderNot waits until topic-0 has a live leader other than the given ones.
func replWaitLeaderNot(t *testing.T, c *Cluster, topic string, not ...int32) int32 {
	t.Helper()
	var leader int32
	waitFor(t, 30*time.Second, func() error {
		l, _, err := replLeader(c, topic, 0)
		if err != nil {
			return err
		}
		if l < 0 || slices.Contains(not, l) {
			return fmt.Errorf("%s-0 leader %d", topic, l)
		}
		leader = l
		return nil
	})
	waitLeaders(t, c, topic, 1)
	return leader
}

// TestDivergentLogsTruncate (KIP-101/279): a leader appends records (acks=1) no follower
// has (both frozen), is killed; a follower becomes leader and takes new writes; the old
// leader returns and truncates to the new leader's history. Then two leader changes in a
// row, each old leader holding its own unreplicated suffix. All replicas end identical and
// every record acknowledged by acks=all (or by the surviving leader) is there.
func TestDivergentLogsTruncate(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: map[string]string{
		"zookeeper.session.timeout.ms": "3000",
		"replica.fetch.backoff.ms":     "200",
		// Leaders move only where the test moves them.
		"auto.leader.rebalance.enable": "false",
	}})
	const topic = "div"
	ctl := c.WaitController(30 * time.Second)
	fs := replOthers(c, ctl)
	// A non-controller leads, so killing it does not wait for a controller failover.
	replCreateAssigned(t, c, topic, map[int32][]int32{0: {fs[0], fs[1], ctl}}, map[string]string{"min.insync.replicas": "1"})
	replWaitISR(t, c, topic, 0, []int32{fs[0], fs[1], ctl}, 30*time.Second)
	var kept []replAck
	kept = append(kept, replProduceTo(t, c, topic, sarama.WaitForAll, "all-1", 20)...)

	// 1. Leader A writes 7 records nobody else gets, dies; B leads and writes.
	a := fs[0]
	others := replOthers(c, a)
	for _, id := range others {
		c.Broker(id).Pause()
	}
	lost := replProduceTo(t, c, topic, sarama.WaitForLocal, "lost-a", 7)
	c.Broker(a).Kill()
	for _, id := range others {
		c.Broker(id).Resume()
	}
	b := replWaitLeaderNot(t, c, topic, a)
	kept = append(kept, replProduceTo(t, c, topic, sarama.WaitForAll, "all-2", 15)...)
	c.Broker(a).Restart()
	replWaitISR(t, c, topic, 0, []int32{0, 1, 2}, 30*time.Second)
	replWaitIdentical(t, c, topic, 1, 30*time.Second)
	t.Logf("single change: leader %d lost %d unreplicated records, new leader %d, old leader truncated", a, len(lost), b)

	// 2. Two changes in a row: B writes 5 records only it has and dies; C writes 4 only it
	// has and dies too; the third broker leads; B and C return and truncate.
	if l, _, err := replLeader(c, topic, 0); err != nil || l != b {
		t.Fatalf("leader moved from %d to %d (%v)", b, l, err)
	}
	cc := replOthers(c, b)
	for _, id := range cc {
		c.Broker(id).Pause()
	}
	lost = append(lost, replProduceTo(t, c, topic, sarama.WaitForLocal, "lost-b", 5)...)
	c.Broker(b).Kill()
	for _, id := range cc {
		c.Broker(id).Resume()
	}
	c2 := replWaitLeaderNot(t, c, topic, b)
	third := replOthers(c, b, c2)[0]
	c.Broker(third).Pause()
	// c2 appends at its own epoch; the frozen third broker never sees it.
	lost = append(lost, replProduceTo(t, c, topic, sarama.WaitForLocal, "lost-c", 4)...)
	c.Broker(c2).Kill()
	c.Broker(third).Resume()
	d := replWaitLeaderNot(t, c, topic, b, c2)
	kept = append(kept, replProduceTo(t, c, topic, sarama.WaitForLocal, "d", 6)...)
	c.Broker(b).Restart()
	c.Broker(c2).Restart()
	replWaitISR(t, c, topic, 0, []int32{0, 1, 2}, 30*time.Second)
	kept = append(kept, replProduceTo(t, c, topic, sarama.WaitForAll, "all-3", 5)...)
	replWaitIdentical(t, c, topic, 1, 30*time.Second)
	t.Logf("two changes: %d (lost %d) → %d (lost %d) → %d", b, 5, c2, 4, d)

	got := replConsumeAll(t, c, topic)[0]
	for _, k := range kept {
		if got[k.offset] != k.value {
			t.Errorf("acked %s at %d: found %q", k.value, k.offset, got[k.offset])
		}
	}
	present := map[string]bool{}
	for _, v := range got {
		present[v] = true
	}
	// A frozen follower may still take in one response the leader sent before it died: a
	// fetch parked at the leader completes on the first append and carries whatever the log
	// holds when it is read, so a prefix of a group can survive. Nothing after a lost record
	// may survive: a follower only ever copies a contiguous prefix of the leader's log.
	survived := map[string]int{}
	gone := map[string]bool{}
	for _, l := range lost {
		g := l.value[:6]
		switch {
		case !present[l.value]:
			gone[g] = true
		case gone[g]:
			t.Errorf("unreplicated record %s survived after an earlier record of its group was lost", l.value)
		default:
			survived[g]++
		}
	}
	t.Logf("unreplicated records that survived through a parked fetch: %v", survived)
}

// TestUncleanLeaderElection: replicas [x, y] of two topics, y frozen until it left the
// ISR, records acked with acks=all (ISR {x}), x killed, y resumed. With unclean election
// off the partition has no leader and, once x returns, every acked record is there; with
// unclean.leader.election.enable=true on the topic, y takes over.
func TestUncleanLeaderElection(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3, Process: true, Props: map[string]string{
		"zookeeper.session.timeout.ms": "6000",
		"replica.lag.time.max.ms":      "1500",
	}})
	ctl := c.WaitController(30 * time.Second)
	fs := replOthers(c, ctl)
	x, y := fs[0], fs[1]
	replCreateAssigned(t, c, "clean", map[int32][]int32{0: {x, y}}, map[string]string{"min.insync.replicas": "1"})
	replCreateAssigned(t, c, "unclean", map[int32][]int32{0: {x, y}}, map[string]string{"min.insync.replicas": "1", "unclean.leader.election.enable": "true"})
	for _, tp := range []string{"clean", "unclean"} {
		replWaitISR(t, c, tp, 0, []int32{x, y}, 30*time.Second)
	}
	c.Broker(y).Pause()
	// Traffic so the frozen follower falls behind, then out of the ISR.
	var acked []replAck
	waitFor(t, 10*time.Second, func() error {
		acked = append(acked, replProduceTo(t, c, "clean", sarama.WaitForAll, fmt.Sprintf("c%d", len(acked)), 1)...)
		replProduceTo(t, c, "unclean", sarama.WaitForAll, "u", 1)
		for _, tp := range []string{"clean", "unclean"} {
			if _, isr, err := replLeader(c, tp, 0); err != nil || len(isr) != 1 {
				return fmt.Errorf("%s ISR %v %v", tp, isr, err)
			}
		}
		return nil
	})
	acked = append(acked, replProduceTo(t, c, "clean", sarama.WaitForAll, "after-shrink", 10)...)
	c.Broker(x).Kill()
	c.Broker(y).Resume()
	// unclean: y (out of sync) takes over once x's session expired.
	waitFor(t, 30*time.Second, func() error {
		l, _, err := replLeader(c, "unclean", 0)
		if err != nil || l != y {
			return fmt.Errorf("unclean leader %d %v", l, err)
		}
		return nil
	})
	// clean: no leader, the ISR keeps x (Kafka keeps the last ISR member): the controller
	// writes this when it takes x's replicas offline, after the elections.
	waitFor(t, 10*time.Second, func() error {
		l, isr, err := replLeader(c, "clean", 0)
		if err != nil || l != -1 || !slices.Equal(isr, []int32{x}) {
			return fmt.Errorf("clean topic with its only ISR replica dead: leader %d ISR %v (%v), want -1 [%d]", l, isr, err, x)
		}
		return nil
	})
	if parts, _, err := metadataPartitions(t, c.Broker(y).Addr(), "clean"); err != nil || parts[0].Leader != -1 {
		t.Errorf("broker %d's Metadata for clean-0: %+v %v, want no leader", y, parts[0], err)
	}
	// The out-of-sync leader serves writes.
	replProduceTo(t, c, "unclean", sarama.WaitForAll, "after-unclean", 3)
	c.Broker(x).Restart()
	if l := replWaitLeaderNot(t, c, "clean", -1); l != x {
		t.Fatalf("clean leader %d after %d returned", l, x)
	}
	got := replConsumeAll(t, c, "clean")[0]
	for _, k := range acked {
		if got[k.offset] != k.value {
			t.Errorf("acked %s at %d: found %q", k.value, k.offset, got[k.offset])
		}
	}
	t.Logf("clean: %d acked records kept; unclean: out-of-sync broker %d took over", len(acked), y)
}
