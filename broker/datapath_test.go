package broker

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func produceReq(version, acks int16, timeoutMs int32, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis = acks, timeoutMs
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = partition, records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func (e *dataEnv) produce(req *kmsg.ProduceRequest) kmsg.ProduceResponseTopicPartition {
	e.t.Helper()
	resp, err := e.handle(req)
	if err != nil {
		e.t.Fatalf("produce: %v", err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

func fetchReq(version int16, maxWaitMs, minBytes, maxBytes int32, topic string, parts map[int32]int64, partMax int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWaitMs, minBytes, maxBytes
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	for p := int32(0); p < int32(len(parts)); p++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, parts[p], partMax
		t.Partitions = append(t.Partitions, fp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

func (e *dataEnv) fetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	e.t.Helper()
	resp, err := e.handle(req)
	if err != nil {
		e.t.Fatalf("fetch: %v", err)
	}
	return resp.(*kmsg.FetchResponse)
}

// batchOffsets parses fetched record batches into their (base offset, record count).
func batchOffsets(t testing.TB, b []byte) [][2]int64 {
	t.Helper()
	var out [][2]int64
	for len(b) >= 61 {
		n := 12 + int(binary.BigEndian.Uint32(b[8:]))
		if n > len(b) {
			break // a partial trailing batch, which clients skip
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:n]); err != nil {
			t.Fatalf("batch: %v", err)
		}
		if rb.CRC != int32(crc32.Checksum(b[21:n], crc32c)) {
			t.Fatalf("fetched batch at %d has a bad CRC", rb.FirstOffset)
		}
		out = append(out, [2]int64{rb.FirstOffset, int64(rb.NumRecords)})
		b = b[n:]
	}
	return out
}

func TestProduceFetchRoundTrip(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("rt", 1)
	for i, want := range []int64{0, 3, 6} {
		p := e.produce(produceReq(9, 1, 5000, "rt", 0, valuesBatch(3, 100)))
		if p.ErrorCode != 0 || p.BaseOffset != want || p.LogAppendTime != -1 || p.LogStartOffset != 0 {
			t.Fatalf("produce %d: %+v", i, p)
		}
	}
	resp := e.fetch(fetchReq(12, 0, 1, 1<<20, "rt", map[int32]int64{0: 0}, 1<<20))
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.HighWatermark != 9 || p.LastStableOffset != 9 || p.LogStartOffset != 0 || p.AbortedTransactions != nil {
		t.Fatalf("fetch: %+v", p)
	}
	if got := batchOffsets(t, p.RecordBatches); len(got) != 3 || got[0] != [2]int64{0, 3} || got[2] != [2]int64{6, 3} {
		t.Fatalf("batches %v", got)
	}
	// From the middle of a batch: the whole batch comes back (the client skips), as in Kafka.
	p = e.fetch(fetchReq(12, 0, 1, 1<<20, "rt", map[int32]int64{0: 4}, 1<<20)).Topics[0].Partitions[0]
	if got := batchOffsets(t, p.RecordBatches); len(got) != 2 || got[0][0] != 3 {
		t.Fatalf("batches from 4: %v", got)
	}
	// At the HW: empty, no error.
	p = e.fetch(fetchReq(12, 0, 1, 1<<20, "rt", map[int32]int64{0: 9}, 1<<20)).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.RecordBatches == nil { // empty, never null (librdkafka)
		t.Fatalf("fetch at HW: %+v", p)
	}
	// read_committed: LSO = HW and an empty aborted-transactions list.
	req := fetchReq(12, 0, 1, 1<<20, "rt", map[int32]int64{0: 0}, 1<<20)
	req.IsolationLevel = 1
	p = e.fetch(req).Topics[0].Partitions[0]
	if p.LastStableOffset != 9 || p.AbortedTransactions == nil {
		t.Fatalf("read_committed: %+v", p)
	}
}

func TestProduceErrors(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("ok", 1)
	e.topics["followed"] = [16]byte{9}
	e.parts["followed"] = 1
	e.leaderAndIsr("followed", 2, []int32{2, testBrokerID})

	good := valuesBatch(1, 10)
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 0xff
	two := append(append([]byte(nil), good...), good...)
	zstd := append([]byte(nil), good...)
	binary.BigEndian.PutUint16(zstd[21:], 4)
	binary.BigEndian.PutUint32(zstd[17:], crc32.Checksum(zstd[21:], crc32c))
	v1 := append([]byte(nil), good...)
	v1[16] = 1

	tests := []struct {
		name    string
		req     *kmsg.ProduceRequest
		want    *kerr.Error
		clients string
	}{
		{"acks 2", produceReq(9, 2, 1000, "ok", 0, good), kerr.InvalidRequiredAcks, ""},
		{"unknown topic", produceReq(9, 1, 1000, "nope", 0, good), kerr.UnknownTopicOrPartition, ""},
		{"unknown partition", produceReq(9, 1, 1000, "ok", 7, good), kerr.UnknownTopicOrPartition, ""},
		{"follower", produceReq(9, 1, 1000, "followed", 0, good), kerr.NotLeaderForPartition, ""},
		{"bad crc", produceReq(9, 1, 1000, "ok", 0, badCRC), kerr.CorruptMessage, ""},
		{"two batches", produceReq(9, 1, 1000, "ok", 0, two), kerr.InvalidRecord, ""},
		{"no records", produceReq(9, 1, 1000, "ok", 0, nil), kerr.InvalidRecord, ""},
		{"magic 1", produceReq(9, 1, 1000, "ok", 0, v1), kerr.InvalidRecord, ""},
		{"zstd at v6", produceReq(6, 1, 1000, "ok", 0, zstd), kerr.UnsupportedCompressionType, ""},
		{"internal topic", produceReq(9, 1, 1000, "__consumer_offsets", 0, good), kerr.InvalidTopicException, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := e.produce(tt.req)
			if p.ErrorCode != tt.want.Code {
				t.Fatalf("error %d (%v), want %s", p.ErrorCode, kerr.ErrorForCode(p.ErrorCode), tt.want.Message)
			}
			if p.BaseOffset != -1 || (tt.req.Version >= 8) != (p.ErrorMessage != nil) {
				t.Fatalf("partition %+v", p)
			}
		})
	}
	// KIP-951 (v10): the current leader and its endpoint come with NOT_LEADER_OR_FOLLOWER.
	e.updateMetadataReq(func(req *kmsg.UpdateMetadataRequest) {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = 2
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = "10.0.0.2", 9093, "PLAINTEXT"
		lb.Endpoints = append(lb.Endpoints, ep)
		req.LiveBrokers = append(req.LiveBrokers, lb)
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic, ts.TopicID = "followed", e.topics["followed"]
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Leader, ps.LeaderEpoch, ps.Replicas, ps.ISR = 2, 0, []int32{2, 1}, []int32{2, 1}
		ts.PartitionStates = append(ts.PartitionStates, ps)
		req.TopicStates = append(req.TopicStates, ts)
	})
	resp, _ := e.handle(produceReq(10, 1, 1000, "followed", 0, good))
	pr := resp.(*kmsg.ProduceResponse)
	if p := pr.Topics[0].Partitions[0]; p.CurrentLeader.LeaderID != 2 || len(pr.Brokers) != 1 || pr.Brokers[0].Port != 9093 {
		t.Fatalf("v10 current leader: %+v brokers %+v", p.CurrentLeader, pr.Brokers)
	}
	// Nothing that failed validation was appended.
	if l, _ := e.logs.GetLog(logstore.TopicPartition{Topic: "ok", Partition: 0}); l.LogEndOffset() != 0 {
		t.Fatalf("LEO %d after rejected produces", l.LogEndOffset())
	}
}

func TestProduceAcksAllWaitsForHighWatermark(t *testing.T) {
	e := newDataEnv(t)
	e.topics["r2"] = [16]byte{7}
	e.parts["r2"] = 1
	e.leaderAndIsr("r2", testBrokerID, []int32{testBrokerID, 2})

	// The follower never fetches: acks=-1 times out; acks=1 does not wait.
	start := time.Now()
	p := e.produce(produceReq(9, -1, 200, "r2", 0, valuesBatch(1, 10)))
	if p.ErrorCode != kerr.RequestTimedOut.Code || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("acks=-1 without follower: %+v after %v", p, time.Since(start))
	}
	if p := e.produce(produceReq(9, 1, 200, "r2", 0, valuesBatch(1, 10))); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("acks=1: %+v", p)
	}

	// A parked acks=-1 produce completes when the follower's fetch moves the HW past it.
	done := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() { done <- e.produce(produceReq(9, -1, 10000, "r2", 0, valuesBatch(2, 10))) }()
	tp := logstore.TopicPartition{Topic: "r2", Partition: 0}
	l, _ := e.logs.GetLog(tp)
	waitFor(t, 5*time.Second, func() bool { return l.LogEndOffset() == 4 })
	if l.HighWatermark() != 0 {
		t.Fatalf("HW %d before the follower fetched", l.HighWatermark())
	}
	// Consumers see nothing above the HW; a follower reads up to the LEO.
	if p := e.fetch(fetchReq(12, 0, 1, 1<<20, "r2", map[int32]int64{0: 0}, 1<<20)).Topics[0].Partitions[0]; len(p.RecordBatches) != 0 || p.HighWatermark != 0 {
		t.Fatalf("consumer fetch above HW: %+v", p)
	}
	fr0 := e.rm.FetchMessages(context.Background(), FetchParams{ReplicaID: 2, MaxBytes: 1 << 20},
		[]FetchPartitionRequest{{TP: tp, FetchOffset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}})
	if fr0[0].Err != nil || fr0[0].Records.Size == 0 {
		t.Fatalf("follower fetch: %+v", fr0[0])
	}
	if l.HighWatermark() != 0 {
		t.Fatalf("HW %d moved on a follower fetch at offset 0", l.HighWatermark())
	}
	fr := e.rm.FetchMessages(context.Background(), FetchParams{ReplicaID: 2, MaxBytes: 1 << 20},
		[]FetchPartitionRequest{{TP: tp, FetchOffset: 4, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}})
	if fr[0].Err != nil {
		t.Fatal(fr[0].Err)
	}
	select {
	case p := <-done:
		if p.ErrorCode != 0 || p.BaseOffset != 2 {
			t.Fatalf("acks=-1 after follower fetch: %+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("acks=-1 produce did not complete after the HW moved")
	}
	if l.HighWatermark() != 4 {
		t.Fatalf("HW %d", l.HighWatermark())
	}
}

func TestProduceMinInsyncReplicas(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.Props["min.insync.replicas"] = "2"
	e.topics["m"] = [16]byte{3}
	e.parts["m"] = 1
	e.leaderAndIsr("m", testBrokerID, []int32{testBrokerID, 2, 3})
	// ISR {1,2,3} but we want ISR {1}: shrink through a new LeaderAndIsr.
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version, req.ControllerEpoch = 7, e.ctrlEp
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = "m", e.topics["m"]
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas = testBrokerID, 5, []int32{testBrokerID}, []int32{testBrokerID, 2, 3}
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	if r := e.rm.BecomeLeaderOrFollower(req); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr: %+v", r)
	}
	if p := e.produce(produceReq(9, -1, 1000, "m", 0, valuesBatch(1, 1))); p.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=-1 with ISR 1 < min ISR 2: %+v", p)
	}
	// acks=1 is not subject to min.insync.replicas.
	if p := e.produce(produceReq(9, 1, 1000, "m", 0, valuesBatch(1, 1))); p.ErrorCode != 0 {
		t.Fatalf("acks=1: %+v", p)
	}
}

func waitFor(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFetchWaitsForMinBytes(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("w", 2)

	// Nothing to read: the fetch waits max_wait and returns empty.
	start := time.Now()
	resp := e.fetch(fetchReq(11, 300, 1, 1<<20, "w", map[int32]int64{0: 0, 1: 0}, 1<<20))
	if d := time.Since(start); d < 300*time.Millisecond || d > 3*time.Second {
		t.Fatalf("empty fetch returned after %v", d)
	}
	if len(resp.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Fatal("data from an empty log")
	}

	// A parked fetch wakes on an append to either partition, well before max_wait.
	var wg sync.WaitGroup
	wg.Add(1)
	var got *kmsg.FetchResponse
	var took time.Duration
	go func() {
		defer wg.Done()
		s := time.Now()
		got = e.fetch(fetchReq(11, 10000, 1, 1<<20, "w", map[int32]int64{0: 0, 1: 0}, 1<<20))
		took = time.Since(s)
	}()
	time.Sleep(100 * time.Millisecond)
	if p := e.produce(produceReq(9, 1, 1000, "w", 1, valuesBatch(2, 10))); p.ErrorCode != 0 {
		t.Fatalf("produce: %+v", p)
	}
	wg.Wait()
	if took > 5*time.Second || len(got.Topics[0].Partitions[1].RecordBatches) == 0 {
		t.Fatalf("parked fetch took %v, partition 1: %+v", took, got.Topics[0].Partitions[1])
	}
	t.Logf("parked fetch answered %v after it was sent (append at ~100ms)", took)

	// min_bytes above what exists: waits until max_wait, then returns what there is.
	start = time.Now()
	resp = e.fetch(fetchReq(11, 200, 1<<20, 1<<20, "w", map[int32]int64{0: 0, 1: 0}, 1<<20))
	if time.Since(start) < 200*time.Millisecond || len(resp.Topics[0].Partitions[1].RecordBatches) == 0 {
		t.Fatalf("min_bytes fetch: %v", time.Since(start))
	}
}

func TestFetchWakesOnLeadershipLoss(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("lose", 1)
	done := make(chan *kmsg.FetchResponse, 1)
	// v10: no client metadata, so only the leader may answer (a v11+ consumer without a
	// leader epoch may go on reading from the follower, KIP-392).
	go func() { done <- e.fetch(fetchReq(10, 10000, 1, 1<<20, "lose", map[int32]int64{0: 0}, 1<<20)) }()
	time.Sleep(50 * time.Millisecond)
	e.leaderAndIsr("lose", 2, []int32{2, testBrokerID})
	select {
	case r := <-done:
		if c := r.Topics[0].Partitions[0].ErrorCode; c != kerr.NotLeaderForPartition.Code {
			t.Fatalf("error %d", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked fetch not woken by leadership change")
	}
}

func TestFetchLimits(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("big", 2)
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 2; i++ {
			if r := e.produce(produceReq(9, 1, 1000, "big", p, valuesBatch(1, 10000))); r.ErrorCode != 0 {
				t.Fatal(r)
			}
		}
	}
	// KIP-74: max_bytes 100 still returns the first batch of the first partition, and
	// nothing more.
	resp := e.fetch(fetchReq(12, 0, 1, 100, "big", map[int32]int64{0: 0, 1: 0}, 100))
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	if got := batchOffsets(t, p0.RecordBatches); len(got) != 1 || len(p1.RecordBatches) != 0 {
		t.Fatalf("KIP-74: p0 batches %v, p1 %d bytes", got, len(p1.RecordBatches))
	}
	// partition_max_bytes limits each partition; max_bytes the whole response.
	resp = e.fetch(fetchReq(12, 0, 1, 1<<20, "big", map[int32]int64{0: 0, 1: 0}, 15000))
	for _, p := range resp.Topics[0].Partitions {
		if got := batchOffsets(t, p.RecordBatches); len(got) != 1 {
			t.Fatalf("partition_max_bytes: %v", got)
		}
	}
	// Offset out of range: error and -1 offsets.
	p := e.fetch(fetchReq(12, 0, 1, 1<<20, "big", map[int32]int64{0: 99, 1: 0}, 1<<20)).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != -1 || p.RecordBatches == nil {
		t.Fatalf("out of range: %+v", p)
	}
}

func TestFetchSessionsAndTopicIDs(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("s", 1)
	req := fetchReq(12, 0, 1, 1<<20, "s", map[int32]int64{0: 0}, 1<<20)
	req.SessionID, req.SessionEpoch = 0, 0 // wants a session: created (fetch_session.go), full response
	if r := e.fetch(req); r.ErrorCode != 0 || r.SessionID == 0 || len(r.Topics) != 1 {
		t.Fatalf("session request: %+v", r)
	}
	req.SessionID, req.SessionEpoch = 12345, 1 // incremental with an id we never gave
	if r := e.fetch(req); r.ErrorCode != kerr.FetchSessionIDNotFound.Code || len(r.Topics) != 0 {
		t.Fatalf("incremental: %+v", r)
	}
	req.SessionID, req.SessionEpoch = 12345, -1 // close + sessionless
	if r := e.fetch(req); r.ErrorCode != 0 || len(r.Topics) != 1 {
		t.Fatalf("close session: %+v", r)
	}
	// v13: topic ids.
	req = fetchReq(13, 0, 1, 1<<20, "", map[int32]int64{0: 0}, 1<<20)
	req.Topics[0].TopicID = e.topics["s"]
	if r := e.fetch(req); r.Topics[0].Partitions[0].ErrorCode != 0 || r.Topics[0].TopicID != e.topics["s"] {
		t.Fatalf("v13 by id: %+v", r.Topics[0])
	}
	req.Topics[0].TopicID = [16]byte{0xee}
	if r := e.fetch(req); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("v13 unknown id: %+v", r.Topics[0])
	}
}

func TestListOffsets(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("lo", 1)
	base := time.Now().Add(-time.Hour).UnixMilli()
	for i := int64(0); i < 3; i++ {
		b := makeBatch(base+i*1000, testRecord{value: []byte("a")}, testRecord{value: []byte("b"), tsDelta: 500})
		if r := e.produce(produceReq(9, 1, 1000, "lo", 0, b)); r.ErrorCode != 0 {
			t.Fatal(r)
		}
	}
	list := func(v int16, ts ...int64) []kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(v)
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		for _, x := range ts {
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Timestamp = x
			rt.Partitions = append(rt.Partitions, p)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := e.handle(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions
	}
	for _, tt := range []struct {
		name       string
		ts         int64
		wantOffset int64
		wantTS     int64
	}{
		{"latest", -1, 6, -1},
		{"earliest", -2, 0, -1},
		{"earliest local", -4, 0, -1},
		{"max timestamp", -3, 5, base + 2500},
		{"exact timestamp", base + 1000, 2, base + 1000},
		{"between records", base + 1200, 3, base + 1500},
		{"before everything", 0, 0, base},
		{"after everything", base + 99999, -1, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := list(8, tt.ts)[0]
			if p.ErrorCode != 0 || p.Offset != tt.wantOffset || p.Timestamp != tt.wantTS {
				t.Fatalf("got offset %d ts %d err %d, want %d %d", p.Offset, p.Timestamp, p.ErrorCode, tt.wantOffset, tt.wantTS)
			}
			if tt.ts == -1 && p.LeaderEpoch != 0 {
				t.Fatalf("latest leader epoch %d", p.LeaderEpoch)
			}
		})
	}
	// v0: offset arrays from segment boundaries, newest first.
	v0 := func(ts int64, maxN int32) []int64 {
		p, err := e.rm.LegacyFetchOffsetsBefore(logstore.TopicPartition{Topic: "lo", Partition: 0}, ts, maxN, true, true, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got := v0(-1, 10); len(got) != 2 || got[0] != 6 || got[1] != 0 {
		t.Fatalf("v0 latest: %v", got)
	}
	if got := v0(-2, 10); len(got) != 1 || got[0] != 0 {
		t.Fatalf("v0 earliest: %v", got)
	}
	if got := v0(-1, 1); len(got) != 1 || got[0] != 6 {
		t.Fatalf("v0 latest, 1 offset: %v", got)
	}
	if ps := list(8, -1, -2); ps[0].ErrorCode != kerr.InvalidRequest.Code || ps[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("duplicate partition: %+v", ps)
	}
	e.leaderAndIsr("lo", 2, []int32{2, testBrokerID})
	if p := list(1, -1)[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("follower: %+v", p)
	}
}

func TestProduceAcksAllFailsOnLeadershipLoss(t *testing.T) {
	e := newDataEnv(t)
	e.topics["ll"] = [16]byte{4}
	e.parts["ll"] = 1
	e.leaderAndIsr("ll", testBrokerID, []int32{testBrokerID, 2})
	done := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() { done <- e.produce(produceReq(9, -1, 10000, "ll", 0, valuesBatch(1, 10))) }()
	l, _ := e.logs.GetLog(logstore.TopicPartition{Topic: "ll", Partition: 0})
	waitFor(t, 5*time.Second, func() bool { return l.LogEndOffset() == 1 })
	e.leaderAndIsr("ll", 2, []int32{testBrokerID, 2})
	select {
	case p := <-done:
		if p.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("acks=-1 after leadership loss: %+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked produce not woken by the leadership change")
	}
}

func TestProduceLogAppendTime(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.Props["log.message.timestamp.type"] = "LogAppendTime"
	e.createTopic("lat", 1)
	before := time.Now().UnixMilli()
	p := e.produce(produceReq(9, 1, 1000, "lat", 0, makeBatch(1000, testRecord{value: []byte("x")})))
	if p.ErrorCode != 0 || p.LogAppendTime < before || p.LogAppendTime > time.Now().UnixMilli() {
		t.Fatalf("LogAppendTime topic: %+v", p)
	}
}

// TestConcurrentProducersAndFetchers: several goroutines produce to one partition while
// others fetch; offsets are unique and contiguous and the HW never goes backwards.
func TestConcurrentProducersAndFetchers(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("c", 1)
	const producers, each = 4, 100
	var wg sync.WaitGroup
	offsets := make(chan int64, producers*each)
	for i := 0; i < producers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				p := e.produce(produceReq(9, -1, 5000, "c", 0, valuesBatch(2, 20)))
				if p.ErrorCode != 0 {
					t.Errorf("produce: %+v", p)
					return
				}
				offsets <- p.BaseOffset
			}
		}()
	}
	stop := make(chan struct{})
	var fwg sync.WaitGroup
	for i := 0; i < 2; i++ {
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			var lastHW int64
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := e.fetch(fetchReq(12, 100, 1, 1<<20, "c", map[int32]int64{0: lastHW}, 1<<20)).Topics[0].Partitions[0]
				if p.ErrorCode != 0 || p.HighWatermark < lastHW {
					t.Errorf("fetch: error %d, HW %d after %d", p.ErrorCode, p.HighWatermark, lastHW)
					return
				}
				lastHW = p.HighWatermark
			}
		}()
	}
	wg.Wait()
	close(stop)
	fwg.Wait()
	close(offsets)
	seen := map[int64]bool{}
	for o := range offsets {
		if seen[o] || o%2 != 0 || o >= producers*each*2 {
			t.Fatalf("offset %d duplicated or misaligned", o)
		}
		seen[o] = true
	}
	if len(seen) != producers*each {
		t.Fatalf("%d distinct offsets", len(seen))
	}
}

func TestProduceMessageTooLarge(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.Props["message.max.bytes"] = "2000"
	e.createTopic("small", 1)
	if p := e.produce(produceReq(9, 1, 1000, "small", 0, valuesBatch(1, 5000))); p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("5000-byte batch with message.max.bytes=2000: %+v", p)
	}
	if p := e.produce(produceReq(9, 1, 1000, "small", 0, valuesBatch(1, 500))); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("small batch after a rejected one: %+v", p)
	}
}

func TestProduceRecordErrors(t *testing.T) {
	e := newDataEnv(t)
	e.cfg.Props["log.message.timestamp.difference.max.ms"] = "60000"
	e.createTopic("ts", 1)
	now := time.Now().UnixMilli()
	b := makeBatch(now, testRecord{value: []byte("ok")}, testRecord{value: []byte("old"), tsDelta: -3600_000})
	p := e.produce(produceReq(9, 1, 1000, "ts", 0, b))
	if p.ErrorCode != kerr.InvalidTimestamp.Code || len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 1 || p.ErrorMessage == nil {
		t.Fatalf("record errors: %+v", p)
	}
	if p := e.produce(produceReq(7, 1, 1000, "ts", 0, b)); p.ErrorCode != kerr.InvalidTimestamp.Code || len(p.ErrorRecords) != 0 {
		t.Fatalf("v7 has no record errors: %+v", p)
	}
}
