package broker

// Request builders for InitProducerId (22) and AllocateProducerIds (67) in
// TestEveryAdvertisedVersionRoundTrips, and handler-level tests of the idempotent producer:
// the ProducerIdManager's blocks and prefetch, InitProducerId, and Produce of retried batches.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// fakeBlocks is a controller handing out consecutive blocks of size.
type fakeBlocks struct {
	mu    sync.Mutex
	next  int64
	size  int32
	calls atomic.Int32
	fail  atomic.Int32 // fail this many requests first
}

func (f *fakeBlocks) allocate(ctx context.Context, req *kmsg.AllocateProducerIDsRequest) (*kmsg.AllocateProducerIDsResponse, error) {
	f.calls.Add(1)
	if f.fail.Load() > 0 {
		f.fail.Add(-1)
		resp := kmsg.NewPtrAllocateProducerIDsResponse()
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := kmsg.NewPtrAllocateProducerIDsResponse()
	resp.ProducerIDStart, resp.ProducerIDLen = f.next, f.size
	f.next += int64(f.size)
	return resp, nil
}

// withFakeProducerIDs installs a ProducerIdManager backed by fakeBlocks on e.apis.
func withFakeProducerIDs(e *dataEnv) *fakeBlocks {
	e.apis.services.mu.Lock()
	defer e.apis.services.mu.Unlock()
	if e.apis.services.pids != nil {
		return nil
	}
	f := &fakeBlocks{size: 1000}
	e.apis.services.pids = NewProducerIDManager(testBrokerID, func() int64 { return 7 }, f.allocate, 5*time.Second, e.log)
	e.t.Cleanup(e.apis.ShutdownProducerIDManager)
	return f
}

// generateID retries while the manager waits for a block (as clients retry
// COORDINATOR_LOAD_IN_PROGRESS).
func generateID(t testing.TB, m *ProducerIDManager) int64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		id, err := m.GenerateProducerID()
		if err == nil {
			return id
		}
		if !errors.Is(err, kerr.CoordinatorLoadInProgress) || time.Now().After(deadline) {
			t.Fatalf("generate producer id: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

func init() {
	requestBuilders[22] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			withFakeProducerIDs(e)
			generateID(e.t, e.apis.producerIDManager()) // have a block before the table request
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionTimeoutMillis = 60000
			req.ProducerID, req.ProducerEpoch = -1, -1
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.InitProducerIDResponse)
			if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
				t.Fatalf("InitProducerId response: %+v", resp)
			}
		},
	}
	requestBuilders[67] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrAllocateProducerIDsRequest()
			req.BrokerID, req.BrokerEpoch = testBrokerID, 1
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			// The data env has no controller: Kafka's ZK-mode answer from a non-controller.
			if resp := r.(*kmsg.AllocateProducerIDsResponse); resp.ErrorCode != kerr.NotController.Code {
				t.Fatalf("AllocateProducerIds without a controller: %+v", resp)
			}
		},
	}
}

func TestProducerIDManagerBlocksAndPrefetch(t *testing.T) {
	log, _ := newTestLogger(t)
	f := &fakeBlocks{size: 1000}
	m := NewProducerIDManager(1, func() int64 { return 5 }, f.allocate, 5*time.Second, log)
	defer m.Shutdown()
	// No block yet: Kafka answers COORDINATOR_LOAD_IN_PROGRESS and requests one.
	if _, err := m.GenerateProducerID(); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("first call: %v", err)
	}
	seen := map[int64]bool{}
	prev := int64(-1)
	for i := 0; i < 2500; i++ {
		var id int64
		if i == 0 || i%1000 != 0 {
			id = generateID(t, m)
		} else {
			// The prefetch at 90% had 100 ids' time to arrive: no wait at the switch.
			var err error
			if id, err = m.GenerateProducerID(); err != nil {
				t.Fatalf("id %d: %v (the next block was not prefetched)", i, err)
			}
		}
		if seen[id] || id <= prev {
			t.Fatalf("id %d after %d (repeated or not increasing)", id, prev)
		}
		seen[id], prev = true, id
		switch i % 1000 {
		case 899:
			if n := f.calls.Load(); n != int32(i/1000+1) {
				t.Fatalf("%d block requests before 90%% of block %d", n, i/1000)
			}
		case 900:
			// id 900 of the block crossed the threshold: wait for the prefetched block.
			waitFor(t, 5*time.Second, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.mu.next != nil })
			if n := f.calls.Load(); n != int32(i/1000+2) {
				t.Fatalf("%d block requests after the prefetch of block %d", n, i/1000+1)
			}
		}
	}
	if prev != 2499 {
		t.Fatalf("last id %d", prev)
	}
}

func TestProducerIDManagerRetriesAfterErrors(t *testing.T) {
	log, _ := newTestLogger(t)
	f := &fakeBlocks{size: 10}
	f.fail.Store(3)
	m := NewProducerIDManager(1, func() int64 { return 5 }, f.allocate, 5*time.Second, log)
	defer m.Shutdown()
	if id := generateID(t, m); id != 0 {
		t.Fatalf("first id %d", id)
	}
	if n := f.calls.Load(); n != 4 {
		t.Fatalf("%d requests, want 3 failures then a success", n)
	}
	m.Shutdown()
	if _, err := m.GenerateProducerID(); err == nil {
		t.Fatal("generate after shutdown")
	}
}

func TestInitProducerIDHandler(t *testing.T) {
	e := newDataEnv(t)
	withFakeProducerIDs(e)
	t.Cleanup(e.apis.ShutdownTxnCoordinator)
	call := func(v int16, txn *string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
		t.Helper()
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(v)
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = txn, 60000, pid, epoch
		deadline := time.Now().Add(5 * time.Second)
		for {
			r, err := e.handle(req)
			if err != nil {
				t.Fatal(err)
			}
			resp := r.(*kmsg.InitProducerIDResponse)
			if resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
				continue
			}
			return resp
		}
	}
	first := call(0, nil, -1, -1)
	if first.ErrorCode != 0 || first.ProducerID != 0 || first.ProducerEpoch != 0 {
		t.Fatalf("first InitProducerId: %+v", first)
	}
	// v3+ with the current id and epoch: Kafka ignores them for a null transactional id.
	second := call(4, nil, first.ProducerID, 0)
	if second.ErrorCode != 0 || second.ProducerID != 1 || second.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId with id/epoch: %+v", second)
	}
	for name, tc := range map[string]struct {
		pid   int64
		epoch int16
	}{"id without epoch": {5, -1}, "epoch without id": {-1, 3}} {
		if resp := call(3, nil, tc.pid, tc.epoch); resp.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("%s: %+v", name, resp)
		}
	}
	empty := ""
	if resp := call(4, &empty, -1, -1); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("empty transactional id: %+v", resp)
	}
	// A transactional id goes to the transaction coordinator: this broker leads no
	// __transaction_state partition, so it is not the id's coordinator.
	txn := "txn-1"
	if resp := call(4, &txn, -1, -1); resp.ErrorCode != kerr.NotCoordinator.Code || resp.ProducerID != -1 {
		t.Fatalf("transactional InitProducerId: %+v", resp)
	}
}

// idemRecords is a producer batch from producer pid/epoch at seq with n records.
func idemRecords(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Value: []byte("v")}
	}
	ts := time.Now().UnixMilli()
	b, err := recordbatch.Build(recordbatch.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: int32(n - 1), BaseTimestamp: ts,
		MaxTimestamp: ts, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The direct check of issue 8 at the wire: the same batch sent twice gets the same base
// offset both times (NONE), and is stored once.
func TestProduceRetriedBatchGetsOriginalOffset(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("idem", 1)
	produce := func(records []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = -1, 5000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "idem"
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = records
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		r, err := e.handle(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	if p := produce(idemRecords(t, 42, 0, 0, 3)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first: %+v", p)
	}
	if p := produce(idemRecords(t, 42, 0, 3, 2)); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("second: %+v", p)
	}
	for i := 0; i < 2; i++ {
		if p := produce(idemRecords(t, 42, 0, 0, 3)); p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("retry of the first batch: %+v", p)
		}
		if p := produce(idemRecords(t, 42, 0, 3, 2)); p.ErrorCode != 0 || p.BaseOffset != 3 {
			t.Fatalf("retry of the second batch: %+v", p)
		}
	}
	if p := produce(idemRecords(t, 42, 0, 5, 1)); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Fatalf("next batch: %+v", p)
	}
	if leo := e.logs.AllLogs()[0].LogEndOffset(); leo != 6 {
		t.Fatalf("LEO %d: duplicates were stored", leo)
	}
	// A gap and a fenced epoch are refused with Kafka's codes, nothing appended.
	if p := produce(idemRecords(t, 42, 0, 9, 1)); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: %+v", p)
	}
	if p := produce(idemRecords(t, 42, 1, 0, 1)); p.ErrorCode != 0 || p.BaseOffset != 6 {
		t.Fatalf("epoch bump at seq 0: %+v", p)
	}
	if p := produce(idemRecords(t, 42, 0, 6, 1)); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch: %+v", p)
	}
}
