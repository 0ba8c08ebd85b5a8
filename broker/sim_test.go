package broker

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/mutation"
	"github.com/samsa-kafka/samsa/logstore"
)

// simCluster is a tiny hand-driven stand-in for integration/sim: brokers 1..n, one
// partition, a clock moved by hand, every message delivered at once.
type simCluster struct {
	t       testing.TB
	now     time.Time
	dirs    map[int32]string
	fss     map[int32]*logstore.CrashFS
	brokers map[int32]*SimBroker
	epochs  map[int32]int64
	props   map[string]string
	tp      logstore.TopicPartition
	topicID [16]byte
	ctrlEp  int32
	lists   int // ListOffsets through the synchronous hook
}

func newSimCluster(t testing.TB, n int, props map[string]string) *simCluster {
	t.Helper()
	c := &simCluster{t: t, now: time.Unix(1_700_000_000, 0), dirs: map[int32]string{}, fss: map[int32]*logstore.CrashFS{},
		brokers: map[int32]*SimBroker{}, epochs: map[int32]int64{}, props: props,
		tp: logstore.TopicPartition{Topic: "sim", Partition: 0}, topicID: [16]byte{1, 2, 3}, ctrlEp: 1}
	for id := int32(1); id <= int32(n); id++ {
		d, err := logstore.CrashTempDir("simbroker")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		c.dirs[id] = d
		c.fss[id] = logstore.NewCrashFS()
		c.start(id)
	}
	return c
}

func (c *simCluster) start(id int32) {
	c.t.Helper()
	c.epochs[id] += 100
	epoch := c.epochs[id]
	b, err := OpenSimBroker(SimBrokerConfig{BrokerID: id, Dir: c.dirs[id], FS: c.fss[id], Now: func() time.Time { return c.now },
		BrokerEpoch: func() int64 { return epoch }, Props: c.props,
		ListOffsets: func(leader int32, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
			c.lists++
			r, err := c.brokers[leader].Handle(req)
			if err != nil {
				return nil, err
			}
			return r.(*kmsg.ListOffsetsResponse), nil
		}})
	if err != nil {
		c.t.Fatalf("open broker %d: %v", id, err)
	}
	c.brokers[id] = b
}

// leaderAndIsr sends every listed broker the partition state, then UpdateMetadata.
func (c *simCluster) leaderAndIsr(to []int32, leader, epoch int32, isr []int32) {
	c.t.Helper()
	replicas := []int32{}
	for id := range c.brokers {
		replicas = append(replicas, id)
	}
	slices.Sort(replicas)
	for _, id := range to {
		req := kmsg.NewPtrLeaderAndISRRequest()
		req.Version = 5
		req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 1, c.ctrlEp, c.epochs[id]
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic, ts.TopicID = c.tp.Topic, c.topicID
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Topic, ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = c.tp.Topic, c.tp.Partition, c.ctrlEp, leader, epoch
		ps.ISR, ps.Replicas, ps.ZKVersion = isr, replicas, epoch
		ts.PartitionStates = append(ts.PartitionStates, ps)
		req.TopicStates = append(req.TopicStates, ts)
		resp := c.brokers[id].LeaderAndIsr(req)
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					c.t.Fatalf("LeaderAndIsr to %d: %v", id, kerr.ErrorForCode(rp.ErrorCode))
				}
			}
		}
		um := kmsg.NewPtrUpdateMetadataRequest()
		um.Version = 7
		um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 1, c.ctrlEp, c.epochs[id]
		for _, b := range replicas {
			lb := kmsg.NewUpdateMetadataRequestLiveBroker()
			lb.ID = b
			lb.Endpoints = []kmsg.UpdateMetadataRequestLiveBrokerEndpoint{{Port: 9092, Host: "sim", ListenerName: "PLAINTEXT"}}
			um.LiveBrokers = append(um.LiveBrokers, lb)
		}
		ut := kmsg.NewUpdateMetadataRequestTopicState()
		ut.Topic, ut.TopicID = c.tp.Topic, c.topicID
		up := kmsg.NewUpdateMetadataRequestTopicPartition()
		up.Topic, up.Partition, up.ControllerEpoch, up.Leader, up.LeaderEpoch = c.tp.Topic, c.tp.Partition, c.ctrlEp, leader, epoch
		up.ISR, up.Replicas, up.ZKVersion = isr, replicas, epoch
		ut.PartitionStates = append(ut.PartitionStates, up)
		um.TopicStates = append(um.TopicStates, ut)
		if r := c.brokers[id].UpdateMetadata(um); r.ErrorCode != 0 {
			c.t.Fatalf("UpdateMetadata to %d: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

// replicate runs rounds of every live follower's requests, each answered at once.
func (c *simCluster) replicate(rounds int, skip ...int32) {
	c.t.Helper()
	for range rounds {
		for id := int32(1); id <= int32(len(c.brokers)); id++ {
			b := c.brokers[id]
			if b.Dead() || slices.Contains(skip, id) {
				continue
			}
			for _, r := range b.PollReplicaRequests() {
				leader := c.brokers[r.To]
				resp, err := leader.Handle(r.Request)
				b.CompleteReplicaRequest(r, resp, err)
			}
		}
	}
}

func (c *simCluster) produce(leader int32, acks int16, values ...string) *SimProduce {
	c.t.Helper()
	var vs [][]byte
	for _, v := range values {
		vs = append(vs, []byte(v))
	}
	sp, err := c.brokers[leader].Produce(c.tp, SimRecords(c.now.UnixMilli(), vs...), acks)
	if err != nil {
		c.t.Fatalf("produce to %d: %v", leader, err)
	}
	return sp
}

func (c *simCluster) state(id int32) SimReplicaState {
	c.t.Helper()
	s, ok := c.brokers[id].Replica(c.tp)
	if !ok {
		c.t.Fatalf("broker %d does not host %s", id, c.tp)
	}
	return s
}

func (c *simCluster) batches(id int32) []SimBatch {
	c.t.Helper()
	bs, err := c.brokers[id].ReadLog(c.tp, 0, -1)
	if err != nil {
		c.t.Fatalf("read log of %d: %v", id, err)
	}
	return bs
}

func sameBatches(a, b []SimBatch) bool {
	return slices.EqualFunc(a, b, func(x, y SimBatch) bool { return bytes.Equal(x.Bytes, y.Bytes) })
}

var simProps = map[string]string{"min.insync.replicas": "2", "replica.lag.time.max.ms": "10000", "replica.fetch.backoff.ms": "100"}

func TestSimReplicaAcksAllWaitsForISR(t *testing.T) {
	c := newSimCluster(t, 3, simProps)
	c.leaderAndIsr([]int32{1, 2, 3}, 1, 1, []int32{1, 2, 3})
	sp := c.produce(1, -1, "a", "b")
	if done, err := sp.Check(); done {
		t.Fatalf("acks=all done before any follower fetched (err %v)", err)
	}
	// Round 1: the new followers truncate to their HW (no epoch yet); 2: they fetch the
	// records; 3: their next fetch tells the leader.
	c.replicate(2)
	if done, err := sp.Check(); done {
		t.Fatalf("acks=all done before the leader knew the followers had the records (err %v)", err)
	}
	c.replicate(1)
	if done, err := sp.Check(); !done || err != nil {
		t.Fatalf("acks=all after replication: done %v err %v", done, err)
	}
	c.replicate(1) // followers learn the HW
	for id := int32(1); id <= 3; id++ {
		s := c.state(id)
		if s.HighWatermark != 2 || s.LogEndOffset != 2 {
			t.Errorf("broker %d: HW %d LEO %d, want 2 2", id, s.HighWatermark, s.LogEndOffset)
		}
		if !sameBatches(c.batches(id), c.batches(1)) {
			t.Errorf("broker %d's log differs from the leader's", id)
		}
	}
}

func TestSimReplicaHWIgnoresISRMutation(t *testing.T) {
	t.Cleanup(mutation.Reset)
	mutation.HWIgnoresISR.Store(true)
	c := newSimCluster(t, 3, simProps)
	c.leaderAndIsr([]int32{1, 2, 3}, 1, 1, []int32{1, 2, 3})
	sp := c.produce(1, -1, "a")
	if done, err := sp.Check(); !done || err != nil {
		t.Fatalf("with hw-ignores-isr, acks=all should be answered before replication: done %v err %v", done, err)
	}
}

// simDivergence: broker 1 leads epoch 1 and appends a record only it has; broker 2 takes over
// in epoch 2 and appends another; broker 1, now a follower, must drop its own (KIP-595).
func simDivergence(t *testing.T) *simCluster {
	c := newSimCluster(t, 3, simProps)
	c.leaderAndIsr([]int32{1, 2, 3}, 1, 1, []int32{1, 2, 3})
	c.produce(1, -1, "a")
	c.replicate(3)
	c.produce(1, 1, "only-on-1")
	c.leaderAndIsr([]int32{2, 3}, 2, 2, []int32{2, 3})
	c.produce(2, 1, "c")
	c.replicate(2, 1) // broker 3 follows 2
	c.leaderAndIsr([]int32{1}, 2, 2, []int32{2, 3})
	c.replicate(4)
	return c
}

func TestSimReplicaTruncatesOnDivergence(t *testing.T) {
	c := simDivergence(t)
	for _, id := range []int32{1, 3} {
		if !sameBatches(c.batches(id), c.batches(2)) {
			t.Errorf("broker %d's log differs from the leader's: %v vs %v", id, c.batches(id), c.batches(2))
		}
	}
	if s := c.state(1); s.LogEndOffset != 2 || s.HighWatermark != 2 {
		t.Errorf("broker 1: LEO %d HW %d, want 2 2", s.LogEndOffset, s.HighWatermark)
	}
}

func TestSimReplicaSkipEpochTruncationMutation(t *testing.T) {
	t.Cleanup(mutation.Reset)
	mutation.SkipEpochTruncation.Store(true)
	c := simDivergence(t)
	b1, b2 := c.batches(1), c.batches(2)
	if len(b1) < 2 || len(b2) < 2 || bytes.Equal(b1[1].Bytes, b2[1].Bytes) {
		t.Fatalf("with skip-epoch-truncation broker 1 should keep its divergent record at offset 1: %v vs %v", b1, b2)
	}
}

func TestSimReplicaISRShrinkAndAlterPartition(t *testing.T) {
	c := newSimCluster(t, 3, simProps)
	c.leaderAndIsr([]int32{1, 2, 3}, 1, 1, []int32{1, 2, 3})
	c.produce(1, 1, "a")
	c.replicate(2, 3) // broker 3 never fetches
	c.now = c.now.Add(11 * time.Second)
	c.replicate(1, 3) // broker 2 stays caught up
	c.brokers[1].ShrinkISRs()
	alters := c.brokers[1].PollAlterPartitions()
	if len(alters) != 1 {
		t.Fatalf("want one AlterPartition, got %d", len(alters))
	}
	rp := alters[0].Request.Topics[0].Partitions[0]
	if !slices.Equal(rp.NewISR, []int32{1, 2}) || rp.LeaderEpoch != 1 {
		t.Fatalf("proposal: ISR %v epoch %d", rp.NewISR, rp.LeaderEpoch)
	}
	if again := c.brokers[1].PollAlterPartitions(); len(again) != 0 {
		t.Fatalf("a proposal in flight was polled again")
	}
	// A lost request is sent again.
	c.brokers[1].CompleteAlterPartition(alters[0], nil, errors.New("lost"))
	alters = c.brokers[1].PollAlterPartitions()
	if len(alters) != 1 {
		t.Fatalf("lost proposal not retried: %d", len(alters))
	}
	resp := kmsg.NewPtrAlterPartitionResponse()
	rt := kmsg.NewAlterPartitionResponseTopic()
	rt.Topic, rt.TopidID = c.tp.Topic, c.topicID
	prp := kmsg.NewAlterPartitionResponseTopicPartition()
	prp.Partition, prp.LeaderID, prp.LeaderEpoch, prp.ISR, prp.PartitionEpoch = 0, 1, 1, []int32{1, 2}, 2
	rt.Partitions = append(rt.Partitions, prp)
	resp.Topics = append(resp.Topics, rt)
	c.brokers[1].CompleteAlterPartition(alters[0], resp, nil)
	s := c.state(1)
	if !slices.Equal(s.ISR, []int32{1, 2}) || s.PartitionEpoch != 2 || s.ProposalPending {
		t.Fatalf("after AlterPartition: ISR %v partition epoch %d pending %v", s.ISR, s.PartitionEpoch, s.ProposalPending)
	}
	if got := c.brokers[1].PollAlterPartitions(); len(got) != 0 {
		t.Fatalf("answered proposal polled again")
	}
}

func TestSimReplicaCrashAndReopen(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    logstore.CrashMode
		wantLEO int64
	}{{"power-cut", logstore.CrashLoseUnsynced, 2}, {"kill", logstore.CrashKeepAll, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newSimCluster(t, 3, simProps)
			c.leaderAndIsr([]int32{1, 2, 3}, 1, 1, []int32{1, 2, 3})
			c.produce(1, -1, "a", "b")
			c.replicate(3)
			if err := c.brokers[2].Flush(); err != nil {
				t.Fatal(err)
			}
			c.brokers[2].CheckpointHighWatermarks()
			c.produce(1, -1, "c")
			c.replicate(3)
			if s := c.state(2); s.LogEndOffset != 3 || s.HighWatermark != 3 {
				t.Fatalf("before the crash: LEO %d HW %d", s.LogEndOffset, s.HighWatermark)
			}
			c.brokers[2].Abandon()
			if err := c.fss[2].Crash(tc.mode); err != nil {
				t.Fatal(err)
			}
			if n := c.fss[2].OpenFiles(); n != 0 {
				t.Fatalf("%d files open after the crash", n)
			}
			c.start(2)
			if tps := c.brokers[2].LogTopicPartitions(); !slices.Equal(tps, []logstore.TopicPartition{c.tp}) {
				t.Fatalf("recovered logs: %v", tps)
			}
			bs, err := c.brokers[2].ReadLog(c.tp, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(bs); n == 0 || bs[n-1].LastOffset+1 != tc.wantLEO {
				t.Fatalf("recovered log: %v, want end %d", bs, tc.wantLEO)
			}
			// Back as a follower it catches up with the leader again.
			c.leaderAndIsr([]int32{2}, 1, 1, []int32{1, 3})
			c.replicate(4)
			if !sameBatches(c.batches(2), c.batches(1)) {
				t.Fatalf("restarted follower's log differs from the leader's")
			}
			if s := c.state(2); s.HighWatermark != 3 {
				t.Fatalf("restarted follower HW %d", s.HighWatermark)
			}
		})
	}
}

func TestSimReplicaCleanRestart(t *testing.T) {
	c := newSimCluster(t, 3, simProps)
	c.leaderAndIsr([]int32{1, 2, 3}, 1, 1, []int32{1, 2, 3})
	c.produce(1, -1, "a", "b")
	c.replicate(4)
	if err := c.brokers[2].Close(); err != nil {
		t.Fatal(err)
	}
	if n := c.fss[2].OpenFiles(); n != 0 {
		t.Fatalf("%d files open after a clean shutdown", n)
	}
	// Nothing was fsynced on purpose, but a clean shutdown flushes: a power cut now loses nothing.
	if err := c.fss[2].Crash(logstore.CrashLoseUnsynced); err != nil {
		t.Fatal(err)
	}
	c.start(2)
	c.leaderAndIsr([]int32{2}, 1, 1, []int32{1, 2, 3})
	if s := c.state(2); s.LogEndOffset != 2 || s.HighWatermark != 2 {
		t.Fatalf("after a clean restart: LEO %d HW %d, want 2 2 (HW from the checkpoint)", s.LogEndOffset, s.HighWatermark)
	}
}

// TestSimReplicaDeterministic: the same steps give the same bytes on every replica.
func TestSimReplicaDeterministic(t *testing.T) {
	logs := func() [][]SimBatch {
		c := simDivergence(t)
		var out [][]SimBatch
		for id := int32(1); id <= 3; id++ {
			out = append(out, c.batches(id))
		}
		return out
	}
	a, b := logs(), logs()
	for i := range a {
		if !sameBatches(a[i], b[i]) {
			t.Errorf("broker %d: two runs of the same steps differ", i+1)
		}
	}
}

// BenchmarkSimReplicaSeed is the broker side of one small simulation seed: three brokers
// opened on CrashFS, leadership given out, 50 acks=all produces replicated, one power cut
// and restart of a follower.
func BenchmarkSimReplicaSeed(b *testing.B) {
	for b.Loop() {
		c := newSimCluster(b, 3, simProps)
		c.leaderAndIsr([]int32{1, 2, 3}, 1, 1, []int32{1, 2, 3})
		c.replicate(1) // the new followers truncate to their HW
		for i := range 50 {
			sp := c.produce(1, -1, "v"+string(rune('a'+i%26)))
			c.replicate(2)
			if done, err := sp.Check(); !done || err != nil {
				b.Fatalf("produce %d not acknowledged: %v %v", i, done, err)
			}
		}
		c.brokers[3].Abandon()
		c.fss[3].Crash(logstore.CrashLoseUnsynced)
		c.start(3)
		c.leaderAndIsr([]int32{3}, 1, 1, []int32{1, 2})
		c.replicate(3)
		for _, br := range c.brokers {
			br.Abandon()
		}
		for _, fs := range c.fss {
			fs.Crash(logstore.CrashKeepAll)
		}
		for _, d := range c.dirs {
			os.RemoveAll(d)
		}
	}
}

// TestSimReplicaOutOfRange: a new follower whose fetch offset is below the leader's log
// start (records deleted meanwhile) gets OFFSET_OUT_OF_RANGE, asks the leader's offsets
// through the synchronous ListOffsets hook, and restarts its log at the leader's start.
func TestSimReplicaOutOfRange(t *testing.T) {
	c := newSimCluster(t, 2, map[string]string{"min.insync.replicas": "1", "replica.fetch.backoff.ms": "100"})
	c.leaderAndIsr([]int32{1}, 1, 1, []int32{1})
	c.produce(1, 1, "x1", "x2")
	c.produce(1, 1, "x3")
	p, err := c.brokers[1].rm.Partition(c.tp)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Log().MaybeIncrementLogStartOffset(3); err != nil { // DeleteRecords
		t.Fatal(err)
	}
	c.produce(1, 1, "x4")
	c.leaderAndIsr([]int32{2}, 1, 1, []int32{1})
	for range 4 {
		c.replicate(1)
		c.now = c.now.Add(time.Second) // past any backoff
	}
	if c.lists == 0 {
		t.Fatalf("the follower never asked the leader's offsets")
	}
	s := c.state(2)
	if s.LogStart != 3 || s.LogEndOffset != 4 {
		t.Fatalf("follower log [%d, %d), want [3, 4)", s.LogStart, s.LogEndOffset)
	}
	if !sameBatches(c.batches(2), c.batches(1)) {
		t.Fatalf("follower did not converge on the leader's log: %v vs %v", c.batches(2), c.batches(1))
	}
}
