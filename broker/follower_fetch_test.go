package broker

// follower_fetch_test.go: KIP-392 without ZooKeeper. The leader's RackAwareReplicaSelector
// answers preferred_read_replica only for in-sync, caught-up, alive replicas of the client's
// rack; a follower serves v11+ consumers up to its own high watermark, wakes their waiting
// fetches when the leader moves it, and refuses older versions as Kafka does.

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
)

// rackMetadata sends rm an UpdateMetadata with the given live brokers (all at addr, with
// their racks) and one partition state for tp.
func rackMetadata(t *testing.T, rm *ReplicaManager, addr string, tp logstore.TopicPartition, topicID [16]byte,
	leader, leaderEpoch int32, isr, replicas, alive []int32, racks map[int32]string) {
	t.Helper()
	ta := mustTCPAddr(t, addr)
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version, req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 8, testBrokerID, 1, -1
	for _, id := range alive {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		if r, ok := racks[id]; ok {
			lb.Rack = &r
		}
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = ta.IP.String(), int32(ta.Port), "PLAINTEXT"
		lb.Endpoints = append(lb.Endpoints, ep)
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic, ts.TopicID = tp.Topic, topicID
	ps := kmsg.NewUpdateMetadataRequestTopicPartition()
	ps.Topic, ps.Partition, ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = tp.Topic, tp.Partition, 1, leader, leaderEpoch
	ps.ISR, ps.Replicas = isr, replicas
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	if _, err := rm.MaybeUpdateMetadataCache(req); err != nil {
		t.Fatal(err)
	}
}

// consumerFetch sends one sessionless consumer Fetch of tp at offset through apis.
func consumerFetch(t *testing.T, apis *APIs, version int16, rack string, tp logstore.TopicPartition, topicID [16]byte, offset int64, epoch int32, isolation ...int8) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = version, -1, 1<<20, -1
	req.Rack = rack
	if len(isolation) > 0 {
		req.IsolationLevel = isolation[0]
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = tp.Topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = tp.Partition, offset, 1<<20, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rc := &RequestContext{ClientID: "kip392", APIKey: 1, APIVersion: version, ListenerName: "PLAINTEXT",
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, Received: time.Now(), Log: apis.Log}
	r, err := apis.Handle(context.Background(), rc, req)
	if err != nil {
		t.Fatalf("fetch v%d: %v", version, err)
	}
	resp := r.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch v%d response %+v", version, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// offsetRange is the first and last offsets of fetched record batches (-1, -1 if none).
func offsetRange(t *testing.T, b []byte) (first, last int64) {
	t.Helper()
	first, last = -1, -1
	for _, bo := range batchOffsets(t, b) {
		if first < 0 {
			first = bo[0]
		}
		last = bo[0] + bo[1] - 1
	}
	return first, last
}

func TestReplicaSelectorPreferredReadReplica(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.Props["replica.selector.class"] = config.RackAwareReplicaSelector
	p, _, _ := replicatedPartition(t, e, "kip392", []int32{1, 2, 3})
	tp, id := p.tp, e.topics["kip392"]
	all := []int32{1, 2, 3}
	sendLeaderAndIsr(t, e, tp, testBrokerID, all, all) // epoch 1: an older one can be sent
	epoch := p.LeaderEpoch()
	racks := map[int32]string{1: "r1", 2: "r2", 3: "r3"}
	rackMetadata(t, e.rm, "127.0.0.1:9092", tp, id, 1, epoch, all, all, all, racks)
	appendN(t, p, 5)
	followerFetch(t, e, tp, 2, 5, -1) // broker 2 caught up
	followerFetch(t, e, tp, 3, 2, -1) // broker 3 at offset 2: HW = 2

	type want struct {
		preferred int32
		records   bool
	}
	check := func(what string, got kmsg.FetchResponseTopicPartition, w want) {
		t.Helper()
		if got.ErrorCode != 0 {
			t.Fatalf("%s: error %v", what, kerr.ErrorForCode(got.ErrorCode))
		}
		if got.PreferredReadReplica != w.preferred {
			t.Errorf("%s: preferred_read_replica %d, want %d", what, got.PreferredReadReplica, w.preferred)
		}
		if (len(got.RecordBatches) > 0) != w.records {
			t.Errorf("%s: %d record bytes, want records %v", what, len(got.RecordBatches), w.records)
		}
		if got.HighWatermark != 2 || got.LastStableOffset != 2 || got.LogStartOffset != 0 {
			t.Errorf("%s: hw %d lso %d log start %d, want 2 2 0", what, got.HighWatermark, got.LastStableOffset, got.LogStartOffset)
		}
	}
	for _, v := range []int16{11, 12, 16} {
		check("rack r2", consumerFetch(t, e.apis, v, "r2", tp, id, 0, epoch), want{2, false})
	}
	// read_committed: no aborted transactions list (null), as Kafka's empty read.
	if got := consumerFetch(t, e.apis, 16, "r2", tp, id, 0, -1, 1); got.PreferredReadReplica != 2 || got.AbortedTransactions != nil {
		t.Errorf("read_committed: preferred %d, aborted transactions %v", got.PreferredReadReplica, got.AbortedTransactions)
	}
	check("rack r3 at 0", consumerFetch(t, e.apis, 16, "r3", tp, id, 0, -1), want{3, false})
	check("rack r3 past its log end", consumerFetch(t, e.apis, 16, "r3", tp, id, 3, -1), want{-1, false})
	check("leader's rack", consumerFetch(t, e.apis, 16, "r1", tp, id, 0, -1), want{-1, true})
	check("no rack", consumerFetch(t, e.apis, 16, "", tp, id, 0, -1), want{-1, true})
	check("unknown rack", consumerFetch(t, e.apis, 16, "r9", tp, id, 0, -1), want{-1, true})
	check("v10 (no client metadata)", consumerFetch(t, e.apis, 10, "", tp, id, 0, -1), want{-1, true})
	if got := consumerFetch(t, e.apis, 16, "r2", tp, id, 0, epoch-1); got.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Errorf("stale epoch: error %v, want FENCED_LEADER_EPOCH", kerr.ErrorForCode(got.ErrorCode))
	}

	// Two replicas in the client's rack: the most caught-up one.
	racks[3] = "r2"
	rackMetadata(t, e.rm, "127.0.0.1:9092", tp, id, 1, epoch, all, all, all, racks)
	check("same rack, larger LEO", consumerFetch(t, e.apis, 16, "r2", tp, id, 0, -1), want{2, false})
	followerFetch(t, e, tp, 3, 5, -1)
	followerFetch(t, e, tp, 2, 5, -1) // HW 5 now
	got := consumerFetch(t, e.apis, 16, "r2", tp, id, 0, -1)
	if got.PreferredReadReplica != 2 && got.PreferredReadReplica != 3 || got.HighWatermark != 5 || len(got.RecordBatches) != 0 {
		t.Errorf("same rack, equal LEO: preferred %d hw %d records %d", got.PreferredReadReplica, got.HighWatermark, len(got.RecordBatches))
	}

	// A dead broker is no candidate (no endpoint in the metadata).
	racks[3] = "r3"
	rackMetadata(t, e.rm, "127.0.0.1:9092", tp, id, 1, epoch, all, all, []int32{1, 3}, racks)
	if got := consumerFetch(t, e.apis, 16, "r2", tp, id, 0, -1); got.PreferredReadReplica != -1 || len(got.RecordBatches) == 0 {
		t.Errorf("dead broker 2: preferred %d, %d record bytes", got.PreferredReadReplica, len(got.RecordBatches))
	}

	// Out of the ISR: not named even when caught up.
	sendLeaderAndIsr(t, e, tp, testBrokerID, []int32{1, 3}, all)
	epoch = p.LeaderEpoch()
	rackMetadata(t, e.rm, "127.0.0.1:9092", tp, id, 1, epoch, []int32{1, 3}, all, all, racks)
	followerFetch(t, e, tp, 2, 5, -1)
	followerFetch(t, e, tp, 3, 5, -1)
	if got := consumerFetch(t, e.apis, 16, "r2", tp, id, 0, -1); got.PreferredReadReplica != -1 || len(got.RecordBatches) == 0 {
		t.Errorf("broker 2 out of the ISR: preferred %d, %d record bytes", got.PreferredReadReplica, len(got.RecordBatches))
	}
	if got := consumerFetch(t, e.apis, 16, "r3", tp, id, 0, -1); got.PreferredReadReplica != 3 {
		t.Errorf("broker 3 in the ISR: preferred %d", got.PreferredReadReplica)
	}

	// No selector configured: always the leader.
	delete(e.cfg.Props, "replica.selector.class")
	if got := consumerFetch(t, e.apis, 16, "r3", tp, id, 0, -1); got.PreferredReadReplica != -1 || len(got.RecordBatches) == 0 {
		t.Errorf("no selector: preferred %d, %d record bytes", got.PreferredReadReplica, len(got.RecordBatches))
	}
}

func TestRackAwareReplicaSelectorSelect(t *testing.T) {
	r := func(s string) *string { return &s }
	leader := ReplicaView{Node: ReplicaNode{ID: 1, Rack: r("a")}, LogEndOffset: 10}
	f2 := ReplicaView{Node: ReplicaNode{ID: 2, Rack: r("b")}, LogEndOffset: 8, TimeSinceLastCaughtUpMs: 5}
	f3 := ReplicaView{Node: ReplicaNode{ID: 3, Rack: r("b")}, LogEndOffset: 8, TimeSinceLastCaughtUpMs: 3}
	f4 := ReplicaView{Node: ReplicaNode{ID: 4, Rack: r("b")}, LogEndOffset: 7}
	f5 := ReplicaView{Node: ReplicaNode{ID: 5, Rack: r("c")}, LogEndOffset: 8, TimeSinceLastCaughtUpMs: 3}
	f6 := ReplicaView{Node: ReplicaNode{ID: 6, Rack: r("c")}, LogEndOffset: 8, TimeSinceLastCaughtUpMs: 3}
	pv := PartitionView{Replicas: []ReplicaView{leader, f2, f3, f4, f5, f6}, Leader: leader}
	for _, c := range []struct {
		rack string
		want int32
	}{{"", 1}, {"a", 1}, {"b", 3}, {"c", 6}, {"z", 1}} {
		got, ok := RackAwareReplicaSelector{}.Select(logstore.TopicPartition{}, &ClientMetadata{RackID: c.rack}, pv)
		if !ok || got.Node.ID != c.want {
			t.Errorf("rack %q: selected %d (%v), want %d", c.rack, got.Node.ID, ok, c.want)
		}
	}
}

func TestFollowerServesConsumersUpToItsHighWatermark(t *testing.T) {
	e := newDataEnv(t)
	e.serve()
	tp := logstore.TopicPartition{Topic: "kip392f", Partition: 0}
	id := [16]byte{0x39, 0x2f}
	e.topics[tp.Topic], e.parts[tp.Topic] = id, 1
	all := []int32{1, 2, 3}
	// Broker 3 is in the ISR but never fetches: the leader's HW moves only when the test
	// reports a fetch for it, so the follower's HW stays behind its log end meanwhile.
	lisr(t, e.rm, e.ctrlEp, id, tp, 1, 1, all, all)
	e.updateMetadataWithLeader(tp.Topic, 1, all)
	f := newFollowerEnv(t, e)
	lisr(t, f.rm, e.ctrlEp, id, tp, 1, 1, all, all)
	lp, _ := e.rm.Partition(tp)
	appendN(t, lp, 5)
	fl, _ := f.logs.GetLog(tp)
	waitFor(t, 10*time.Second, func() bool { return fl.LogEndOffset() == 5 })
	if hw := fl.HighWatermark(); hw != 0 {
		t.Fatalf("follower HW %d before the leader's moved", hw)
	}

	consumer := func(client *ClientMetadata, offset int64, epoch int32) FetchPartitionResult {
		return f.rm.FetchMessages(context.Background(), FetchParams{ReplicaID: -1, ReplicaEpoch: -1, MaxBytes: 1 << 20, Client: client},
			[]FetchPartitionRequest{{TP: tp, FetchOffset: offset, LogStartOffset: -1, MaxBytes: 1 << 20, CurrentLeaderEpoch: epoch, LastFetchedEpoch: -1}})[0]
	}
	client := &ClientMetadata{RackID: "r2", ClientID: "kip392", ListenerName: "PLAINTEXT"}
	if r := consumer(client, 0, 1); r.Err != nil || r.Records.Size != 0 || r.HighWatermark != 0 {
		t.Fatalf("records past the follower's HW: err %v, %d bytes, hw %d", r.Err, r.Records.Size, r.HighWatermark)
	}
	for _, c := range []struct {
		what   string
		client *ClientMetadata
		offset int64
		epoch  int32
		want   error
	}{
		{"no client metadata (v0-v10)", nil, 0, -1, ErrNotLeaderOrFollower},
		{"stale leader epoch", client, 0, 0, ErrFencedLeaderEpoch},
		{"newer leader epoch", client, 0, 2, ErrUnknownLeaderEpoch},
		{"past the follower's log end", client, 6, -1, logstore.ErrOffsetOutOfRange},
	} {
		if r := consumer(c.client, c.offset, c.epoch); !errors.Is(r.Err, c.want) {
			t.Errorf("%s: %v, want %v", c.what, r.Err, c.want)
		}
	}

	// A waiting consumer fetch wakes when the leader's HW reaches the follower.
	done := make(chan FetchPartitionResult, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		done <- f.rm.FetchMessages(ctx, FetchParams{ReplicaID: -1, ReplicaEpoch: -1, MaxWait: 10 * time.Minute, MinBytes: 1, MaxBytes: 1 << 20, Client: client},
			[]FetchPartitionRequest{{TP: tp, FetchOffset: 0, LogStartOffset: -1, MaxBytes: 1 << 20, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1}})[0]
	}()
	followerFetch(t, e, tp, 3, 3, -1) // leader HW = 3
	var r FetchPartitionResult
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a consumer waiting on the follower did not wake when its high watermark moved")
	}
	b, err := r.Records.Bytes()
	if r.Err != nil || err != nil {
		t.Fatalf("fetch from follower: %v %v", r.Err, err)
	}
	if first, last := offsetRange(t, b); first != 0 || last != 2 || r.HighWatermark != 3 {
		t.Fatalf("follower served offsets %d..%d with hw %d, want 0..2 with hw 3", first, last, r.HighWatermark)
	}

	// Through the Fetch handler: v11+ is served by the follower (it never names a
	// preferred replica itself), v10 is NOT_LEADER_OR_FOLLOWER.
	apis := NewAPIs(f.rm.cfg.Config, 2, "test-cluster-id", f.rm, f.mc, e.log)
	got := consumerFetch(t, apis, 12, "r2", tp, id, 0, 1)
	if first, last := offsetRange(t, got.RecordBatches); got.ErrorCode != 0 || first != 0 || last != 2 || got.PreferredReadReplica != -1 || got.HighWatermark != 3 {
		t.Errorf("follower fetch v12: error %d offsets %d..%d preferred %d hw %d", got.ErrorCode, first, last, got.PreferredReadReplica, got.HighWatermark)
	}
	if got := consumerFetch(t, apis, 10, "", tp, id, 0, 1); got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("follower fetch v10: error %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(got.ErrorCode))
	}
}

// A parked v11+ fetch that sent its leader epoch ends FENCED_LEADER_EPOCH when this broker
// becomes a follower at a newer epoch; one that sent none is served by the follower.
func TestParkedConsumerFetchOnLeadershipLoss(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("lose12", 1)
	tp := logstore.TopicPartition{Topic: "lose12", Partition: 0}
	req := fetchReq(12, 600000, 1, 1<<20, tp.Topic, map[int32]int64{0: 0}, 1<<20)
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = 0
	done := make(chan *kmsg.FetchResponse, 1)
	go func() { done <- e.fetch(req) }()
	waitFor(t, 10*time.Second, func() bool { // parked: the fetch watches the partition
		p, _ := e.rm.Partition(tp)
		p.watchMu.Lock()
		defer p.watchMu.Unlock()
		return len(p.watchers) > 0
	})
	e.leaderAndIsr(tp.Topic, 2, []int32{2, testBrokerID})
	select {
	case r := <-done:
		if c := r.Topics[0].Partitions[0].ErrorCode; c != kerr.FencedLeaderEpoch.Code {
			t.Fatalf("error %v, want FENCED_LEADER_EPOCH", kerr.ErrorForCode(c))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("parked fetch not woken by the leadership change")
	}
	r := e.fetch(fetchReq(12, 0, 1, 1<<20, tp.Topic, map[int32]int64{0: 0}, 1<<20))
	if c := r.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("v12 fetch without epoch from the follower: %v", kerr.ErrorForCode(c))
	}
}
