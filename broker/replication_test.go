package broker

// replication_test.go: the leader's ISR and high-watermark rules (Partition), the
// diverging-epoch check, OffsetsForLeaderEpoch, and a real follower (ReplicaFetcherManager)
// replicating from a leader over loopback, without ZooKeeper.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() {
	requestBuilders[23] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = "rt"
			p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			p.Partition, p.LeaderEpoch = 0, 0
			t.Partitions = append(t.Partitions, p)
			req.Topics = append(req.Topics, t)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.OffsetForLeaderEpochResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("OffsetForLeaderEpoch response %+v", resp)
			}
		},
	}
}

// proposals records the ISR proposals a partition sends.
type proposals struct {
	mu    sync.Mutex
	props []*isrProposal
}

func (ps *proposals) hook(p *Partition, prop *isrProposal) {
	ps.mu.Lock()
	ps.props = append(ps.props, prop)
	ps.mu.Unlock()
}

func (ps *proposals) last() *isrProposal {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(ps.props) == 0 {
		return nil
	}
	return ps.props[len(ps.props)-1]
}

func (ps *proposals) count() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.props)
}

// replicatedPartition makes broker 1 lead topic name (1 partition) with replicas 1,2,3 and
// the given ISR, with a fake AlterPartition hook and every broker alive.
func replicatedPartition(t *testing.T, e *dataEnv, name string, isr []int32) (*Partition, *logstore.Log, *proposals) {
	t.Helper()
	e.topics[name] = [16]byte{0x5e, byte(len(e.topics))}
	e.parts[name] = 1
	e.leaderAndIsr(name, testBrokerID, []int32{1, 2, 3})
	tp := logstore.TopicPartition{Topic: name, Partition: 0}
	if !slices.Equal(isr, []int32{1, 2, 3}) {
		sendLeaderAndIsr(t, e, tp, testBrokerID, isr, []int32{1, 2, 3})
	}
	p, err := e.rm.Partition(tp)
	if err != nil {
		t.Fatal(err)
	}
	ps := &proposals{}
	p.hooks = &partitionHooks{alterPartition: ps.hook, isBrokerAlive: func(int32) bool { return true }}
	l, _ := e.logs.GetLog(tp)
	return p, l, ps
}

// sendLeaderAndIsr sends one partition state with the next leader epoch.
func sendLeaderAndIsr(t *testing.T, e *dataEnv, tp logstore.TopicPartition, leader int32, isr, replicas []int32) {
	t.Helper()
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version, req.ControllerEpoch, req.ControllerID, req.BrokerEpoch = 7, e.ctrlEp, testBrokerID, -1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = tp.Topic, e.topics[tp.Topic]
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = tp.Partition, e.ctrlEp, leader, e.epochs[tp]
	e.epochs[tp]++
	ps.ISR, ps.Replicas, ps.ZKVersion = isr, replicas, e.epochs[tp]
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	if r := e.rm.BecomeLeaderOrFollower(req); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr: %+v", r)
	}
}

// followerFetch reports a follower fetch at offset (first read: records its fetch state).
func followerFetch(t *testing.T, e *dataEnv, tp logstore.TopicPartition, replica int32, offset int64, lastFetchedEpoch int32) FetchPartitionResult {
	t.Helper()
	r := e.rm.FetchMessages(context.Background(), FetchParams{ReplicaID: replica, ReplicaEpoch: 7, MaxBytes: 1 << 20},
		[]FetchPartitionRequest{{TP: tp, FetchOffset: offset, LogStartOffset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: lastFetchedEpoch}})
	return r[0]
}

func appendN(t *testing.T, p *Partition, n int) {
	t.Helper()
	for range n {
		if _, err := p.appendRecordsToLeader(valuesBatch(1, 10), 1); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHighWatermarkIsMinLEOOverISR(t *testing.T) {
	e := newDataEnv(t)
	p, l, _ := replicatedPartition(t, e, "hw", []int32{1, 2, 3})
	tp := p.tp
	appendN(t, p, 5)
	if l.HighWatermark() != 0 {
		t.Fatalf("HW %d before any follower fetched", l.HighWatermark())
	}
	followerFetch(t, e, tp, 2, 5, -1)
	if l.HighWatermark() != 0 {
		t.Fatalf("HW %d with follower 3 unknown", l.HighWatermark())
	}
	followerFetch(t, e, tp, 3, 3, -1)
	if l.HighWatermark() != 3 {
		t.Fatalf("HW %d, want min LEO 3", l.HighWatermark())
	}
	followerFetch(t, e, tp, 3, 5, -1)
	if l.HighWatermark() != 5 {
		t.Fatalf("HW %d, want 5", l.HighWatermark())
	}
	// Consumers never read past the HW.
	appendN(t, p, 1)
	r := e.rm.FetchMessages(context.Background(), FetchParams{ReplicaID: -1, MaxBytes: 1 << 20},
		[]FetchPartitionRequest{{TP: tp, FetchOffset: 5, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}})
	if r[0].Err != nil || r[0].Records.Size != 0 || r[0].HighWatermark != 5 {
		t.Fatalf("consumer fetch at the HW: %+v", r[0])
	}
}

func TestHighWatermarkFrozenBelowMinISR(t *testing.T) {
	// Kafka 3.7 (KAFKA-15583): no HW advance while |ISR| < min(min.insync.replicas, RF).
	e := newDataEnv(t)
	e.cfg.Props["min.insync.replicas"] = "2"
	p, l, _ := replicatedPartition(t, e, "frozen", []int32{1})
	appendN(t, p, 3)
	if l.HighWatermark() != 0 {
		t.Fatalf("HW %d moved with ISR {1} < min ISR 2", l.HighWatermark())
	}
	if _, err := p.appendRecordsToLeader(valuesBatch(1, 10), -1); ErrorCode(err) != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=-1 with ISR below min: %v", err)
	}
}

func TestISRShrinkAndPendingState(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.ReplicaLagTimeMax = 200 * time.Millisecond
	p, l, ps := replicatedPartition(t, e, "shrink", []int32{1, 2, 3})
	tp := p.tp
	appendN(t, p, 4)
	followerFetch(t, e, tp, 2, 4, -1)
	followerFetch(t, e, tp, 3, 2, -1)
	if l.HighWatermark() != 2 {
		t.Fatalf("HW %d", l.HighWatermark())
	}
	p.maybeShrinkISR()
	if ps.count() != 0 {
		t.Fatalf("shrink proposed within replica.lag.time.max.ms: %+v", ps.last())
	}
	time.Sleep(250 * time.Millisecond)
	followerFetch(t, e, tp, 2, 4, -1) // 2 stays caught up
	p.maybeShrinkISR()
	prop := ps.last()
	if prop == nil || !slices.Equal(prop.newISR, []int32{1, 2}) || prop.expand {
		t.Fatalf("proposal %+v, want shrink to [1 2]", prop)
	}
	if prop.brokerEpochs[2] != 7 {
		t.Fatalf("follower broker epoch %d in proposal, want 7 from its fetch", prop.brokerEpochs[2])
	}
	// Pending: the old (maximal) ISR still holds the HW; no second proposal.
	p.maybeShrinkISR()
	if ps.count() != 1 {
		t.Fatal("a second proposal while one is in flight")
	}
	if st := p.State(); !slices.Equal(st.ISR, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v changed before the controller accepted", st.ISR)
	}
	if l.HighWatermark() != 2 {
		t.Fatalf("HW %d moved past the lagging follower while the shrink is pending", l.HighWatermark())
	}
	// The controller accepts: ISR {1,2}, the HW moves to min LEO over it.
	p.handleAlterPartitionResult(prop, alterPartitionResult{leaderEpoch: prop.leaderEpoch, partitionEpoch: prop.partitionEpoch + 1, isr: []int32{1, 2}})
	if st := p.State(); !slices.Equal(st.ISR, []int32{1, 2}) || st.PartitionEpoch != prop.partitionEpoch+1 {
		t.Fatalf("after commit: %+v", st)
	}
	if l.HighWatermark() != 4 {
		t.Fatalf("HW %d after shrink, want 4", l.HighWatermark())
	}
}

func TestISRExpand(t *testing.T) {
	e := newDataEnv(t)
	p, l, ps := replicatedPartition(t, e, "expand", []int32{1, 2})
	tp := p.tp
	appendN(t, p, 4)
	followerFetch(t, e, tp, 2, 4, -1)
	if l.HighWatermark() != 4 {
		t.Fatalf("HW %d", l.HighWatermark())
	}
	// Follower 3 below the HW: not eligible.
	followerFetch(t, e, tp, 3, 2, -1)
	if ps.count() != 0 {
		t.Fatalf("expansion proposed below the HW: %+v", ps.last())
	}
	followerFetch(t, e, tp, 3, 4, -1)
	prop := ps.last()
	if prop == nil || !prop.expand || !slices.Equal(prop.newISR, []int32{1, 2, 3}) {
		t.Fatalf("proposal %+v, want expand to [1 2 3]", prop)
	}
	// While pending, the maximal ISR includes 3: the HW waits for it.
	appendN(t, p, 2)
	followerFetch(t, e, tp, 2, 6, -1)
	if l.HighWatermark() != 4 {
		t.Fatalf("HW %d moved without the pending member 3", l.HighWatermark())
	}
	p.handleAlterPartitionResult(prop, alterPartitionResult{leaderEpoch: prop.leaderEpoch, partitionEpoch: prop.partitionEpoch + 1, isr: []int32{1, 2, 3}})
	followerFetch(t, e, tp, 3, 6, -1)
	if st := p.State(); !slices.Equal(st.ISR, []int32{1, 2, 3}) || l.HighWatermark() != 6 {
		t.Fatalf("after commit: ISR %v HW %d", st.ISR, l.HighWatermark())
	}
}

func TestISRProposalRefusedAsStale(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.ReplicaLagTimeMax = 50 * time.Millisecond
	p, _, ps := replicatedPartition(t, e, "stale", []int32{1, 2, 3})
	time.Sleep(60 * time.Millisecond)
	p.maybeShrinkISR()
	prop := ps.last()
	if prop == nil {
		t.Fatal("no shrink proposed")
	}
	for _, code := range []int16{kerr.FencedLeaderEpoch.Code, kerr.InvalidUpdateVersion.Code} {
		p.handleAlterPartitionResult(prop, alterPartitionResult{code: code})
		p.maybeShrinkISR()
		if ps.count() != 1 || !p.isPending(prop) {
			t.Fatalf("after %v: a leader refused as stale acted again", kerr.ErrorForCode(code))
		}
	}
	// The next LeaderAndIsr resets the state.
	sendLeaderAndIsr(t, e, p.tp, testBrokerID, []int32{1, 2, 3}, []int32{1, 2, 3})
	if p.isPending(prop) {
		t.Fatal("still pending after LeaderAndIsr")
	}
	// INELIGIBLE_REPLICA: back to the committed state, a new proposal may follow.
	time.Sleep(60 * time.Millisecond)
	p.maybeShrinkISR()
	prop2 := ps.last()
	p.handleAlterPartitionResult(prop2, alterPartitionResult{code: kerr.IneligibleReplica.Code})
	if p.isPending(prop2) {
		t.Fatal("INELIGIBLE_REPLICA left the proposal pending")
	}
}

func TestAcksAllNotEnoughReplicasAfterAppend(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.Props["min.insync.replicas"] = "2"
	p, _, ps := replicatedPartition(t, e, "after", []int32{1, 2})
	_ = ps
	tp := p.tp
	done := make(chan ProduceResult, 1)
	go func() {
		done <- e.rm.AppendRecords(context.Background(), 500*time.Millisecond, -1, []logstore.TopicPartition{tp}, [][]byte{valuesBatch(1, 10)})[0]
	}()
	l, _ := e.logs.GetLog(tp)
	waitFor(t, 5*time.Second, func() bool { return l.LogEndOffset() == 1 })
	// The ISR shrinks to {1} (committed) before follower 2 caught up.
	p.mu.Lock()
	prop := p.proposeLocked([]int32{1}, false)
	p.mu.Unlock()
	p.handleAlterPartitionResult(prop, alterPartitionResult{leaderEpoch: prop.leaderEpoch, partitionEpoch: prop.partitionEpoch + 1, isr: []int32{1}})
	// The HW cannot advance below min ISR: the produce times out... unless the HW had
	// already passed. Here it had not, so REQUEST_TIMED_OUT per Kafka; with the HW reached
	// and the ISR below min, NOT_ENOUGH_REPLICAS_AFTER_APPEND.
	r := <-done
	if ErrorCode(r.Err) != kerr.RequestTimedOut.Code {
		t.Fatalf("acks=-1 with ISR shrunk below min: %v", r.Err)
	}
	// HW reached, then ISR below min: NOT_ENOUGH_REPLICAS_AFTER_APPEND.
	p.mu.Lock()
	p.mu.maximalISR = []int32{1}
	p.mu.Unlock()
	l.UpdateHighWatermark(1)
	if done, err := p.checkEnoughReplicasReachOffset(1); !done || ErrorCode(err) != kerr.NotEnoughReplicasAfterAppend.Code {
		t.Fatalf("check: %v %v", done, err)
	}
}

func TestFetchDivergingEpoch(t *testing.T) {
	e := newDataEnv(t)
	p, _, _ := replicatedPartition(t, e, "div", []int32{1, 2, 3})
	tp := p.tp
	appendN(t, p, 3) // epoch 0: [0,3)
	sendLeaderAndIsr(t, e, tp, testBrokerID, []int32{1, 2, 3}, []int32{1, 2, 3})
	appendN(t, p, 2) // epoch 1: [3,5)
	// A follower at offset 4 that last fetched epoch 0 diverges: epoch 0 ends at 3 here.
	r := followerFetch(t, e, tp, 2, 4, 0)
	if r.Err != nil || !r.Diverging || r.DivergingEpoch != 0 || r.DivergingEndOffset != 3 || r.Records.Size != 0 {
		t.Fatalf("diverging fetch: %+v", r)
	}
	// Consistent: epoch 1 at offset 5.
	if r := followerFetch(t, e, tp, 2, 5, 1); r.Err != nil || r.Diverging {
		t.Fatalf("consistent fetch: %+v", r)
	}
	// OffsetsForLeaderEpoch agrees.
	if ep, end, err := e.rm.LastOffsetForLeaderEpoch(tp, -1, 0, true); err != nil || ep != 0 || end != 3 {
		t.Fatalf("OffsetsForLeaderEpoch(0) = %d %d %v", ep, end, err)
	}
	if ep, end, err := e.rm.LastOffsetForLeaderEpoch(tp, -1, 1, true); err != nil || ep != 1 || end != 5 {
		t.Fatalf("OffsetsForLeaderEpoch(1) = %d %d %v", ep, end, err)
	}
	if _, _, err := e.rm.LastOffsetForLeaderEpoch(tp, 0, 1, true); ErrorCode(err) != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("old current epoch: %v", err)
	}
}

// followerEnv is a second broker (id 2) hosting follower replicas, fetching from the leader
// dataEnv's SocketServer with a real ReplicaFetcherManager.
type followerEnv struct {
	logs *logstore.Manager
	mc   *MetadataCache
	rm   *ReplicaManager
}

func newFollowerEnv(t *testing.T, leader *dataEnv) *followerEnv {
	t.Helper()
	logs, err := logstore.OpenManager(logstore.ManagerConfig{Dirs: []string{t.TempDir()}, BrokerID: 2, Log: leader.log})
	if err != nil {
		t.Fatal(err)
	}
	mc := NewMetadataCache(2)
	cfg := *leader.cfg
	cfg.BrokerID = 2
	cfg.ReplicaFetchBackoff = 50 * time.Millisecond
	cfg.ReplicaFetchWaitMax = 100 * time.Millisecond
	rm := NewReplicaManager(ReplicaManagerConfig{BrokerID: 2, Config: &cfg, Logs: logs, Metadata: mc, Log: leader.log.WithField("follower", 2),
		BrokerEpoch: func() int64 { return 22 }})
	ctx, cancel := context.WithCancel(context.Background())
	rm.Startup(ctx)
	t.Cleanup(func() {
		cancel()
		rm.Shutdown()
		if err := logs.Shutdown(); err != nil {
			t.Errorf("follower log manager shutdown: %v", err)
		}
	})
	ta := mustTCPAddr(t, leader.addr)
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version, req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 8, testBrokerID, leader.ctrlEp, -1
	for _, id := range []int32{1, 2} {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = ta.IP.String(), int32(ta.Port), "PLAINTEXT"
		lb.Endpoints = append(lb.Endpoints, ep)
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	if _, err := rm.MaybeUpdateMetadataCache(req); err != nil {
		t.Fatal(err)
	}
	return &followerEnv{logs: logs, mc: mc, rm: rm}
}

// lisr sends rm one LeaderAndIsr partition state.
func lisr(t *testing.T, rm *ReplicaManager, ctrlEp int32, topicID [16]byte, tp logstore.TopicPartition, leader, epoch int32, isr, replicas []int32) {
	t.Helper()
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version, req.ControllerEpoch, req.ControllerID, req.BrokerEpoch = 7, ctrlEp, testBrokerID, -1
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = tp.Topic, topicID
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = tp.Partition, ctrlEp, leader, epoch
	ps.ISR, ps.Replicas, ps.ZKVersion = isr, replicas, epoch
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	if r := rm.BecomeLeaderOrFollower(req); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr: %+v", r)
	}
}

func logBytes(t *testing.T, l *logstore.Log) []byte {
	t.Helper()
	if l.LogEndOffset() == l.LogStartOffset() {
		return nil
	}
	info, err := l.Read(l.LogStartOffset(), 1<<30, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := info.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFollowerReplicatesAndTruncatesOnDivergence(t *testing.T) {
	e := newDataEnv(t)
	e.serve()
	tp := logstore.TopicPartition{Topic: "rep", Partition: 0}
	id := [16]byte{0x2e, 0x9}
	e.topics[tp.Topic], e.parts[tp.Topic] = id, 1
	replicas := []int32{1, 2}
	lisr(t, e.rm, e.ctrlEp, id, tp, 1, 0, replicas, replicas)
	e.updateMetadataWithLeader(tp.Topic, 1, replicas) // Fetch v13+ resolves topic ids in the cache
	f := newFollowerEnv(t, e)
	lisr(t, f.rm, e.ctrlEp, id, tp, 1, 0, replicas, replicas)

	// acks=-1 completes because the follower's fetches move the HW.
	for i := range 5 {
		r := e.rm.AppendRecords(context.Background(), 10*time.Second, -1, []logstore.TopicPartition{tp}, [][]byte{valuesBatch(2, 10)})[0]
		if r.Err != nil || r.Info.FirstOffset != int64(2*i) {
			t.Fatalf("acks=-1 produce %d: %+v", i, r)
		}
	}
	ll, _ := e.logs.GetLog(tp)
	fl, _ := f.logs.GetLog(tp)
	waitFor(t, 10*time.Second, func() bool { return fl.LogEndOffset() == 10 && fl.HighWatermark() == 10 })
	if string(logBytes(t, ll)) != string(logBytes(t, fl)) {
		t.Fatal("follower bytes differ from the leader's")
	}

	// Divergence (KIP-101/279): broker 2 leads epoch 1 and appends 3 records nobody else
	// has; broker 1 then leads epoch 2 and appends 4 records; broker 2 follows again and
	// must truncate its epoch-1 records before fetching epoch 2's.
	lisr(t, f.rm, e.ctrlEp, id, tp, 2, 1, []int32{2}, replicas)
	fp, _ := f.rm.Partition(tp)
	for range 3 {
		if _, err := fp.appendRecordsToLeader(valuesBatch(1, 7), 1); err != nil {
			t.Fatal(err)
		}
	}
	lisr(t, e.rm, e.ctrlEp, id, tp, 1, 2, []int32{1}, replicas)
	lp, _ := e.rm.Partition(tp)
	for range 4 {
		if _, err := lp.appendRecordsToLeader(valuesBatch(1, 9), 1); err != nil {
			t.Fatal(err)
		}
	}
	if fl.LogEndOffset() != 13 || ll.LogEndOffset() != 14 {
		t.Fatalf("LEOs before rejoin: follower %d leader %d", fl.LogEndOffset(), ll.LogEndOffset())
	}
	lisr(t, f.rm, e.ctrlEp, id, tp, 1, 3, []int32{1}, replicas)
	lisr(t, e.rm, e.ctrlEp, id, tp, 1, 3, []int32{1}, replicas)
	for range 2 {
		if _, err := lp.appendRecordsToLeader(valuesBatch(1, 5), 1); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, func() bool {
		return fl.LogEndOffset() == ll.LogEndOffset() && fmt.Sprint(ll.EpochEntries()) == fmt.Sprint(fl.EpochEntries())
	})
	if string(logBytes(t, ll)) != string(logBytes(t, fl)) {
		t.Fatal("follower bytes differ from the leader's after divergence")
	}
	if fmt.Sprint(ll.EpochEntries()) != fmt.Sprint(fl.EpochEntries()) {
		t.Fatalf("epoch caches differ: leader %v follower %v", ll.EpochEntries(), fl.EpochEntries())
	}
	if !e.logW.contains("truncated follower log") && !testLogContains(e, "truncated follower log") {
		t.Fatal("no truncation logged")
	}
}

func testLogContains(e *dataEnv, s string) bool { return e.logW.contains(s) }

// TestOffsetTruncationState is AbstractFetcherThread.getOffsetTruncationState's table
// (KIP-279): the follower log has epoch 0 at [0,3) and epoch 2 at [3,5), HW 2.
func TestOffsetTruncationState(t *testing.T) {
	e := newDataEnv(t)
	p, l, _ := replicatedPartition(t, e, "trunc", []int32{1, 2, 3})
	appendN(t, p, 3)
	sendLeaderAndIsr(t, e, p.tp, testBrokerID, []int32{1, 2, 3}, []int32{1, 2, 3}) // epoch 1, nothing appended
	sendLeaderAndIsr(t, e, p.tp, testBrokerID, []int32{1, 2, 3}, []int32{1, 2, 3}) // epoch 2
	appendN(t, p, 2)
	l.UpdateHighWatermark(2)
	f := &replicaFetcher{}
	st := &fetchState{p: p}
	for _, c := range []struct {
		name         string
		leaderEpoch  int32
		leaderEnd    int64
		want         int64
		wantComplete bool
	}{
		{"same epoch, same end", 2, 5, 5, true},
		{"same epoch, leader shorter", 2, 4, 4, true},
		{"leader's epoch unknown here: end of our largest smaller epoch, ask again", 1, 3, 3, false},
		{"smaller common epoch ends earlier on the leader", 0, 2, 2, true},
		{"leader knows no such epoch: to the HW", -1, -1, 2, true},
		{"undefined epoch with an end offset", -1, 4, 4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, complete := f.offsetTruncationState(st, c.leaderEpoch, c.leaderEnd)
			if got != c.want || complete != c.wantComplete {
				t.Fatalf("(%d, %d) → %d complete=%v, want %d %v (epochs %v)", c.leaderEpoch, c.leaderEnd, got, complete, c.want, c.wantComplete, l.EpochEntries())
			}
		})
	}
}

func init() {
	requestBuilders[21] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrDeleteRecordsRequest()
			t := kmsg.NewDeleteRecordsRequestTopic()
			t.Topic = "rt"
			p := kmsg.NewDeleteRecordsRequestTopicPartition()
			p.Partition, p.Offset = 0, 0
			t.Partitions = append(t.Partitions, p)
			req.Topics, req.TimeoutMillis = append(req.Topics, t), 1000
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.DeleteRecordsResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("DeleteRecords response %+v", resp)
			}
		},
	}
}

// TestDeleteRecordsReachesFollowers: DeleteRecords moves the leader's log start offset,
// waits for the follower (which follows through its fetches) and answers the low watermark.
func TestDeleteRecordsReachesFollowers(t *testing.T) {
	e := newDataEnv(t)
	e.serve()
	tp := logstore.TopicPartition{Topic: "del", Partition: 0}
	id := [16]byte{0xde, 0x1}
	e.topics[tp.Topic], e.parts[tp.Topic] = id, 1
	replicas := []int32{1, 2}
	lisr(t, e.rm, e.ctrlEp, id, tp, 1, 0, replicas, replicas)
	e.updateMetadataWithLeader(tp.Topic, 1, replicas)
	f := newFollowerEnv(t, e)
	lisr(t, f.rm, e.ctrlEp, id, tp, 1, 0, replicas, replicas)
	for range 4 {
		if r := e.rm.AppendRecords(context.Background(), 10*time.Second, -1, []logstore.TopicPartition{tp}, [][]byte{valuesBatch(1, 10)})[0]; r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	// Broker 2 must be alive in the leader's cache to count for the low watermark.
	e.updateMetadataReq(func(req *kmsg.UpdateMetadataRequest) {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = 2
		req.LiveBrokers = append(req.LiveBrokers, lb)
	})
	if r := e.rm.DeleteRecords(context.Background(), time.Second, []logstore.TopicPartition{tp}, []int64{9}); ErrorCode(r[0].err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("delete above the HW: %+v", r[0])
	}
	r := e.rm.DeleteRecords(context.Background(), 10*time.Second, []logstore.TopicPartition{tp}, []int64{3})
	if r[0].err != nil || r[0].lowWatermark != 3 {
		t.Fatalf("DeleteRecords: %+v", r[0])
	}
	fl, _ := f.logs.GetLog(tp)
	if fl.LogStartOffset() != 3 {
		t.Fatalf("follower log start offset %d, want 3", fl.LogStartOffset())
	}
}

func init() {
	requestBuilders[35] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			return kmsg.NewPtrDescribeLogDirsRequest() // nil topics: every partition
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.DescribeLogDirsResponse)
			if len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 {
				t.Fatalf("DescribeLogDirs response %+v", resp)
			}
			found := false
			for _, tp := range resp.Dirs[0].Topics {
				found = found || tp.Topic == "rt" && len(tp.Partitions) == 2
			}
			if !found {
				t.Fatalf("DescribeLogDirs lacks rt's 2 partitions: %+v", resp.Dirs[0].Topics)
			}
			if resp.Version >= 4 && (resp.Dirs[0].TotalBytes <= 0 || resp.Dirs[0].UsableBytes < 0) {
				t.Fatalf("DescribeLogDirs v4 bytes %+v", resp.Dirs[0])
			}
		},
	}
}
