package transaction

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// memLog is one broker's view of the __transaction_state partitions, in memory. Several
// coordinators may share one (failover: the new leader reads what the old one wrote).
type memLog struct {
	mu       sync.Mutex
	leaders  map[int32]int32
	batches  map[int32][][]byte
	next     map[int32]int64
	failWith error
	// readGate, when set, blocks Read until closed (a load in progress).
	readGate chan struct{}
}

func newMemLog() *memLog {
	return &memLog{leaders: map[int32]int32{}, batches: map[int32][][]byte{}, next: map[int32]int64{}}
}

func (l *memLog) LeaderEpoch(p int32) (int32, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.leaders[p]
	return e, ok
}

func (l *memLog) Append(_ context.Context, p int32, batch []byte, _ time.Duration) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.leaders[p]; !ok {
		return -1, fmt.Errorf("append: %w", kerr.NotLeaderForPartition)
	}
	if l.failWith != nil {
		return -1, l.failWith
	}
	return l.appendLocked(p, batch), nil
}

func (l *memLog) appendLocked(p int32, batch []byte) int64 {
	b := recordbatch.Batch(append([]byte(nil), batch...))
	base := l.next[p]
	b.SetBaseOffset(base)
	l.batches[p] = append(l.batches[p], b)
	l.next[p] = b.NextOffset()
	return base
}

// appendRecords writes records directly (to build a log for a load).
func (l *memLog) appendRecords(t *testing.T, p int32, recs ...kv) {
	t.Helper()
	b, err := buildBatch(time.Unix(1_700_000_000, 0), recs)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.appendLocked(p, b)
	l.mu.Unlock()
}

func (l *memLog) Offsets(p int32) (int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 0, l.next[p], nil
}

func (l *memLog) Read(p int32, offset int64, _ int32) ([]byte, error) {
	l.mu.Lock()
	gate := l.readGate
	l.mu.Unlock()
	if gate != nil {
		<-gate
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	for _, b := range l.batches[p] {
		if recordbatch.Batch(b).LastOffset() >= offset {
			out = append(out, b...)
		}
	}
	return out, nil
}

// logRecord is one decoded record of the log.
type logRecord struct {
	id string
	m  *TransactionMetadata // nil: tombstone
}

func (l *memLog) records(t *testing.T, p int32) []logRecord {
	t.Helper()
	l.mu.Lock()
	var raw []byte
	for _, b := range l.batches[p] {
		raw = append(raw, b...)
	}
	l.mu.Unlock()
	var out []logRecord
	if _, err := forEachRecord(raw, func(_ int64, k, v []byte) {
		id, err := readTxnRecordKey(k)
		if err != nil {
			t.Fatalf("key: %v", err)
		}
		m, err := readTxnRecordValue(id, v)
		if err != nil {
			t.Fatalf("value: %v", err)
		}
		out = append(out, logRecord{id, m})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

type fakePIDs struct {
	mu   sync.Mutex
	next int64
	err  error
}

func (f *fakePIDs) GenerateProducerID() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return -1, f.err
	}
	f.next++
	return f.next, nil
}

// sentMarkers is one WriteTxnMarkers request as the fake sender saw it.
type sentMarkers struct {
	broker int32
	req    *kmsg.WriteTxnMarkersRequest
}

// fakeSender is the metadata cache and the inter-broker network. Leaders: missing means
// the partition is unknown (deleted), -1 a partition without a live leader. respond picks
// each partition's error code (nil: all NONE); sendErr fails whole requests.
type fakeSender struct {
	mu      sync.Mutex
	leaders map[TopicPartition]int32
	sent    []sentMarkers
	respond func(broker int32, pid int64, tp TopicPartition) int16
	sendErr error
}

func (s *fakeSender) Leader(topic string, partition int32) (int32, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.leaders[TopicPartition{topic, partition}]
	return b, ok
}

func (s *fakeSender) setLeader(tp TopicPartition, broker int32) {
	s.mu.Lock()
	s.leaders[tp] = broker
	s.mu.Unlock()
}

func (s *fakeSender) Send(_ context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, sentMarkers{broker, req})
	if s.sendErr != nil {
		return nil, s.sendErr
	}
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	resp.Version = req.Version
	for _, mk := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = mk.ProducerID
		for _, t := range mk.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if s.respond != nil {
					rp.ErrorCode = s.respond(broker, mk.ProducerID, TopicPartition{t.Topic, p})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func (s *fakeSender) requests() []sentMarkers {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sentMarkers(nil), s.sent...)
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

const testPartitions = 4

type env struct {
	t      *testing.T
	clock  *testClock
	log    *memLog
	pids   *fakePIDs
	sender *fakeSender
	c      *TransactionCoordinator
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, clock: &testClock{now: time.UnixMilli(1_700_000_000_000)}, log: newMemLog(), pids: &fakePIDs{next: 999},
		sender: &fakeSender{leaders: map[TopicPartition]int32{{"a", 0}: 1, {"a", 1}: 2, {"b", 0}: 1, {"__consumer_offsets", 7}: 3}}}
	e.c = e.newCoordinator()
	for p := int32(0); p < testPartitions; p++ {
		e.elect(e.c, p, 1)
	}
	return e
}

func (e *env) newCoordinator() *TransactionCoordinator {
	logger := logrus.New()
	logger.SetOutput(testWriter{e.t})
	logger.SetLevel(logrus.DebugLevel)
	c := New(Config{BrokerID: 1, NumPartitions: testPartitions, MaxTimeout: 15 * time.Minute, Clock: e.clock.Now,
		Logger: logrus.NewEntry(logger)}, e.log, e.pids, e.sender)
	c.markers.retryBackoff = 0
	c.active.Store(true) // Start's loops are driven by hand (pump) in these tests
	e.t.Cleanup(c.Shutdown)
	return c
}

// elect makes this broker lead p at epoch and loads it synchronously.
func (e *env) elect(c *TransactionCoordinator, p, epoch int32) {
	e.t.Helper()
	e.log.mu.Lock()
	e.log.leaders[p] = epoch
	e.log.mu.Unlock()
	c.OnElection(p, epoch)
	e.settle(c)
	if got, loaded := c.state.ownsPartition(p); !loaded || got != epoch {
		e.t.Fatalf("partition %d not loaded at epoch %d", p, epoch)
	}
}

func (e *env) settle(c *TransactionCoordinator) { c.run.tasks.Wait() }

// pump runs the marker send loop by hand until nothing is left to send.
func (e *env) pump(c *TransactionCoordinator) {
	for i := 0; i < 100; i++ {
		c.markers.generateRequests()
		e.settle(c)
		c.markers.mu.Lock()
		idle := len(c.markers.inFlight) == 0 && len(c.markers.appendRetries) == 0
		for _, q := range c.markers.queues {
			idle = idle && len(q) == 0
		}
		c.markers.mu.Unlock()
		if idle {
			return
		}
	}
}

// pumpOnce runs one round of the send loop.
func (e *env) pumpOnce(c *TransactionCoordinator) {
	c.markers.generateRequests()
	e.settle(c)
}

func (e *env) metadata(id string) *TransactionMetadata {
	e.t.Helper()
	cur, ke := e.c.state.getTransactionState(id)
	if ke != nil || cur == nil {
		e.t.Fatalf("no metadata for %s: %v", id, ke)
	}
	return cur.txn
}

// snapshot returns state, epoch and partitions of id.
func (e *env) snapshot(id string) (TransactionState, int64, int16, string, bool) {
	m := e.metadata(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.producerID, m.producerEpoch, formatPartitions(m.partitionsLocked()), m.hasPendingState
}

func (e *env) init(id string) (int64, int16) {
	e.t.Helper()
	pid, epoch, code := e.c.HandleInitProducerID(context.Background(), id, 60000, -1, -1)
	if code != 0 {
		e.t.Fatalf("InitProducerId(%s): %v", id, kerr.ErrorForCode(code))
	}
	return pid, epoch
}

func (e *env) add(id string, pid int64, epoch int16, parts map[string][]int32) int16 {
	return e.c.HandleAddPartitions(context.Background(), id, pid, epoch, parts)
}

func (e *env) end(id string, pid int64, epoch int16, commit bool) int16 {
	return e.c.HandleEndTxn(context.Background(), id, pid, epoch, commit)
}

func expectCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != code(want) {
		t.Fatalf("%s: got %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}
