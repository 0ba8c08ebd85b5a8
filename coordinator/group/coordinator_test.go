package group

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

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// fakeLog is one broker's view of the offsets partitions: it leads every partition in
// leaders, appends in memory and can refuse batches above maxBatch (MESSAGE_TOO_LARGE).
type fakeLog struct {
	mu       sync.Mutex
	leaders  map[int32]int32
	batches  map[int32][][]byte
	next     map[int32]int64
	maxBatch int
	failWith error

	verifyErr   error               // VerifyTransaction's answer
	verified    []string            // transactional ids verified
	guards      []VerificationGuard // guards AppendTransactional received
	offsetsGate chan struct{}       // when set, Offsets waits for a receive
}

type fakeGuard struct{ n int }

func (l *fakeLog) VerifyTransaction(_ context.Context, p int32, txnID string, _ int64, _ int16) (VerificationGuard, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.verified = append(l.verified, txnID)
	if l.verifyErr != nil {
		return nil, l.verifyErr
	}
	return &fakeGuard{n: len(l.verified)}, nil
}

func (l *fakeLog) AppendTransactional(ctx context.Context, p int32, batch []byte, guard VerificationGuard, timeout time.Duration) (int64, error) {
	l.mu.Lock()
	l.guards = append(l.guards, guard)
	l.mu.Unlock()
	return l.Append(ctx, p, batch, true, timeout)
}

// appendMarker writes a COMMIT or ABORT control batch of producerID (what WriteTxnMarkers
// appends) and returns its offset.
func (l *fakeLog) appendMarker(t *testing.T, p int32, producerID int64, epoch int16, commit bool) int64 {
	t.Helper()
	typ := byte(0)
	if commit {
		typ = 1
	}
	h := recordbatch.Header{Attributes: recordbatch.AttrTransactional | recordbatch.AttrControl, ProducerID: producerID,
		ProducerEpoch: epoch, BaseSequence: -1, BaseTimestamp: 1, MaxTimestamp: 1}
	b, err := recordbatch.Build(h, []recordbatch.Record{{Key: []byte{0, 0, 0, typ}, Value: []byte{0, 0, 0, 0, 0, 5}}}, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	off, err := l.Append(context.Background(), p, b, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func newFakeLog() *fakeLog {
	return &fakeLog{leaders: map[int32]int32{}, batches: map[int32][][]byte{}, next: map[int32]int64{}, maxBatch: 1 << 20}
}

func (l *fakeLog) LeaderEpoch(p int32) (int32, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.leaders[p]
	return e, ok
}

func (l *fakeLog) Append(_ context.Context, p int32, batch []byte, _ bool, _ time.Duration) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.leaders[p]; !ok {
		return -1, fmt.Errorf("append: %w", kerr.NotLeaderForPartition)
	}
	if l.failWith != nil {
		return -1, l.failWith
	}
	if len(batch) > l.maxBatch {
		return -1, fmt.Errorf("batch of %d bytes: %w", len(batch), kerr.MessageTooLarge)
	}
	b := recordbatch.Batch(append([]byte(nil), batch...))
	base := l.next[p]
	b.SetBaseOffset(base)
	l.batches[p] = append(l.batches[p], b)
	l.next[p] = b.NextOffset()
	return base, nil
}

func (l *fakeLog) Offsets(p int32) (int64, int64, error) {
	l.mu.Lock()
	gate := l.offsetsGate
	l.mu.Unlock()
	if gate != nil {
		<-gate
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return 0, l.next[p], nil
}

func (l *fakeLog) Read(p int32, offset int64, _ int32) ([]byte, error) {
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

// records decodes every record of partition p with kmsg-backed DecodeRecord.
func (l *fakeLog) records(t *testing.T, p int32) []DecodedRecord {
	t.Helper()
	raw, _ := l.Read(p, 0, 0)
	var out []DecodedRecord
	if _, err := forEachRecord(raw, func(_ int64, k, v []byte) error {
		r, err := DecodeRecord(k, v)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatalf("decode records: %v", err)
	}
	return out
}

type env struct {
	rebalanceTimeout time.Duration // of the members' joins; 20 s unless set
	t                *testing.T
	clock            *fakeClock
	log              *fakeLog
	c                *Coordinator
}

const testGroup = "g"

func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	logger := logrus.New()
	logger.SetOutput(testWriter{t})
	logger.SetLevel(logrus.DebugLevel)
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	fl := newFakeLog()
	cfg := Config{NumPartitions: 4, InitialRebalanceDelay: 3 * time.Second, Clock: clock, Logger: logrus.NewEntry(logger)}
	if mod != nil {
		mod(&cfg)
	}
	e := &env{t: t, clock: clock, log: fl, rebalanceTimeout: 20 * time.Second}
	e.c = New(cfg, fl)
	t.Cleanup(e.c.Shutdown)
	for p := int32(0); p < e.c.NumPartitions(); p++ {
		e.elect(p, 1)
	}
	return e
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// elect makes this broker lead p and loads it synchronously.
func (e *env) elect(p, epoch int32) {
	e.log.mu.Lock()
	e.log.leaders[p] = epoch
	e.log.mu.Unlock()
	e.c.OnElection(p, epoch)
	e.settle()
	if !e.c.Loaded(p) {
		e.t.Fatalf("partition %d not loaded", p)
	}
}

// settle waits for in-flight appends and loads.
func (e *env) settle() { e.c.wg.Wait() }

// advance moves the fake clock and fires what is due.
func (e *env) advance(d time.Duration) {
	e.clock.mu.Lock()
	e.clock.now = e.clock.now.Add(d)
	e.clock.mu.Unlock()
	e.c.FireDueTimers()
	e.settle()
}

// pendingJoin is a JoinGroup in flight.
type pendingJoin struct {
	mu  sync.Mutex
	res *JoinResult
}

func (p *pendingJoin) get() *JoinResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res
}

func (e *env) join(memberID string, instanceID *string, protocols ...Protocol) *pendingJoin {
	if len(protocols) == 0 {
		protocols = []Protocol{{Name: "range", Metadata: consumerMeta("t")}}
	}
	pj := &pendingJoin{}
	e.c.HandleJoinGroup(JoinRequest{GroupID: testGroup, MemberID: memberID, GroupInstanceID: instanceID, RequireKnownMemberID: true,
		ClientID: "client", ClientHost: "/127.0.0.1", SessionTimeout: 10 * time.Second, RebalanceTimeout: e.rebalanceTimeout,
		ProtocolType: "consumer", Protocols: protocols}, func(r JoinResult) {
		pj.mu.Lock()
		pj.res = &r
		pj.mu.Unlock()
	})
	e.settle()
	return pj
}

// joinNew does the KIP-394 two-step join of a new dynamic member and returns its pending rejoin.
func (e *env) joinNew() (string, *pendingJoin) {
	e.t.Helper()
	first := e.join("", nil).get()
	if first == nil || first.Err != kerr.MemberIDRequired || first.MemberID == "" {
		e.t.Fatalf("first join: %+v", first)
	}
	return first.MemberID, e.join(first.MemberID, nil)
}

type pendingSync struct {
	mu  sync.Mutex
	res *SyncResult
}

func (p *pendingSync) get() *SyncResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res
}

func (e *env) sync(memberID string, gen int32, assignments map[string][]byte) *pendingSync {
	ps := &pendingSync{}
	e.c.HandleSyncGroup(SyncRequest{GroupID: testGroup, GenerationID: gen, MemberID: memberID, Assignments: assignments},
		func(r SyncResult) {
			ps.mu.Lock()
			ps.res = &r
			ps.mu.Unlock()
		})
	e.settle()
	return ps
}

func (e *env) state() State {
	g := e.c.getGroup(testGroup)
	if g == nil {
		return Dead
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state
}

func (e *env) generation() int32 {
	g := e.c.getGroup(testGroup)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.generationID
}

func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

func mustErr(t *testing.T, what string, got, want *kerr.Error) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}

// stableGroup brings two dynamic members to Stable at generation 1 and returns their ids
// (leader first).
func (e *env) stableGroup() (string, string) {
	e.t.Helper()
	a, ja := e.joinNew()
	b, jb := e.joinNew()
	if e.state() != PreparingRebalance || ja.get() != nil {
		e.t.Fatalf("want a parked join in PreparingRebalance, state %s", e.state())
	}
	e.advance(3 * time.Second) // group.initial.rebalance.delay.ms, extended once for b
	if ja.get() != nil {
		e.t.Fatalf("join completed before the extended initial delay")
	}
	e.advance(3 * time.Second)
	ra, rb := ja.get(), jb.get()
	if ra == nil || rb == nil || ra.Err != nil || rb.Err != nil {
		e.t.Fatalf("join results %+v %+v", ra, rb)
	}
	if ra.GenerationID != 1 || rb.GenerationID != 1 || ra.LeaderID != rb.LeaderID || *ra.ProtocolName != "range" {
		e.t.Fatalf("join results %+v %+v", ra, rb)
	}
	leader, follower := a, b
	if ra.LeaderID != a {
		leader, follower = b, a
	}
	lr := ra
	if leader == b {
		lr = rb
	}
	if len(lr.Members) != 2 {
		e.t.Fatalf("leader got %d members", len(lr.Members))
	}
	if e.state() != CompletingRebalance {
		e.t.Fatalf("state %s after join", e.state())
	}
	sf := e.sync(follower, 1, nil)
	if sf.get() != nil {
		e.t.Fatalf("follower sync answered before the leader's")
	}
	sl := e.sync(leader, 1, map[string][]byte{leader: []byte("L"), follower: []byte("F")})
	if r := sl.get(); r == nil || r.Err != nil || string(r.Assignment) != "L" {
		e.t.Fatalf("leader sync %+v", r)
	}
	if r := sf.get(); r == nil || r.Err != nil || string(r.Assignment) != "F" {
		e.t.Fatalf("follower sync %+v", r)
	}
	if e.state() != Stable {
		e.t.Fatalf("state %s after sync", e.state())
	}
	return leader, follower
}

func TestRebalanceScript(t *testing.T) {
	e := newEnv(t, nil)
	leader, follower := e.stableGroup()

	// Heartbeats keep both alive; commits from the current generation are accepted.
	e.advance(5 * time.Second)
	mustErr(t, "heartbeat leader", e.c.Heartbeat(testGroup, leader, nil, 1), nil)
	mustErr(t, "heartbeat follower", e.c.Heartbeat(testGroup, follower, nil, 1), nil)
	errs := e.c.CommitOffsets(context.Background(), CommitRequest{GroupID: testGroup, MemberID: leader, GenerationID: 1,
		Offsets: map[TopicPartition]OffsetAndMetadata{{"t", 0}: {Offset: 42, LeaderEpoch: 3, Metadata: "md", ExpireTimestamp: -1}}})
	mustErr(t, "commit", errs[TopicPartition{"t", 0}], nil)

	// The follower stops heartbeating: after its session timeout it is removed and the
	// group rebalances; the leader learns it from its heartbeat and rejoins alone.
	e.advance(6 * time.Second)
	mustErr(t, "heartbeat leader", e.c.Heartbeat(testGroup, leader, nil, 1), nil)
	e.advance(5 * time.Second)
	if e.state() != PreparingRebalance {
		t.Fatalf("state %s after the follower's session expired", e.state())
	}
	mustErr(t, "heartbeat in rebalance", e.c.Heartbeat(testGroup, leader, nil, 1), kerr.RebalanceInProgress)
	mustErr(t, "heartbeat of the expired member", e.c.Heartbeat(testGroup, follower, nil, 1), kerr.UnknownMemberID)
	// A commit from the previous generation is still allowed while preparing.
	errs = e.c.CommitOffsets(context.Background(), CommitRequest{GroupID: testGroup, MemberID: leader, GenerationID: 1,
		Offsets: map[TopicPartition]OffsetAndMetadata{{"t", 0}: {Offset: 43, LeaderEpoch: -1, ExpireTimestamp: -1}}})
	mustErr(t, "commit while preparing", errs[TopicPartition{"t", 0}], nil)
	rj := e.join(leader, nil)
	r := rj.get()
	if r == nil || r.Err != nil || r.GenerationID != 2 || len(r.Members) != 1 {
		t.Fatalf("rejoin %+v", r)
	}
	sl := e.sync(leader, 2, map[string][]byte{leader: []byte("ALL")})
	if r := sl.get(); r == nil || r.Err != nil || string(r.Assignment) != "ALL" {
		t.Fatalf("sync %+v", r)
	}

	// A clean leave of the last member completes the rebalance at once (no member to wait
	// for): the group is Empty at the next generation and that is written.
	top, merrs := e.c.LeaveGroup(testGroup, []MemberIdentity{{MemberID: leader}})
	mustErr(t, "leave", top, nil)
	mustErr(t, "leave member", merrs[0], nil)
	e.settle()
	if e.state() != Empty || e.generation() != 3 {
		t.Fatalf("state %s gen %d, want Empty 3", e.state(), e.generation())
	}
	offs, err := e.c.FetchOffsets(testGroup, nil, false)
	mustErr(t, "fetch", err, nil)
	if len(offs) != 1 || offs[0].Offset != 43 {
		t.Fatalf("fetched %+v", offs)
	}

	// Every record in the partition decodes with kmsg; the last group record is Empty at gen 3.
	recs := e.log.records(t, e.c.PartitionFor(testGroup))
	var last *kmsg.GroupMetadataValue
	var nOffsets int
	for _, r := range recs {
		if r.IsOffset {
			nOffsets++
		} else {
			last = r.Value
		}
	}
	if nOffsets != 2 || last == nil || last.Generation != 3 || len(last.Members) != 0 || last.ProtocolType != "consumer" {
		t.Fatalf("records: %d offsets, last group %+v", nOffsets, last)
	}
}

func TestBadInputLeavesStateAlone(t *testing.T) {
	e := newEnv(t, nil)
	leader, follower := e.stableGroup()
	before := len(e.log.records(t, e.c.PartitionFor(testGroup)))
	check := func(what string) {
		t.Helper()
		if e.state() != Stable || e.generation() != 1 {
			t.Fatalf("%s: state %s gen %d", what, e.state(), e.generation())
		}
		if n := len(e.log.records(t, e.c.PartitionFor(testGroup))); n != before {
			t.Fatalf("%s: %d records written", what, n-before)
		}
	}
	t.Run("unknown protocol type", func(t *testing.T) {
		pj := &pendingJoin{}
		e.c.HandleJoinGroup(JoinRequest{GroupID: testGroup, ClientID: "c", SessionTimeout: 10 * time.Second,
			RebalanceTimeout: 10 * time.Second, ProtocolType: "connect", Protocols: []Protocol{{Name: "range"}}},
			func(r JoinResult) { pj.res = &r })
		mustErr(t, "join", pj.get().Err, kerr.InconsistentGroupProtocol)
		check("unknown protocol type")
	})
	t.Run("no common protocol", func(t *testing.T) {
		r := e.join(leader, nil, Protocol{Name: "roundrobin"}).get()
		mustErr(t, "join", r.Err, kerr.InconsistentGroupProtocol)
		check("no common protocol")
	})
	t.Run("stale generation commit", func(t *testing.T) {
		errs := e.c.CommitOffsets(context.Background(), CommitRequest{GroupID: testGroup, MemberID: follower, GenerationID: 0,
			Offsets: map[TopicPartition]OffsetAndMetadata{{"t", 1}: {Offset: 1, ExpireTimestamp: -1}}})
		mustErr(t, "commit", errs[TopicPartition{"t", 1}], kerr.IllegalGeneration)
		check("stale generation")
	})
	t.Run("standalone commit to a group with members", func(t *testing.T) {
		errs := e.c.CommitOffsets(context.Background(), CommitRequest{GroupID: testGroup, GenerationID: -1,
			Offsets: map[TopicPartition]OffsetAndMetadata{{"t", 1}: {Offset: 1, ExpireTimestamp: -1}}})
		mustErr(t, "commit", errs[TopicPartition{"t", 1}], kerr.UnknownMemberID)
		check("standalone commit")
	})
	t.Run("sync from a non-member", func(t *testing.T) {
		mustErr(t, "sync", e.sync("stranger", 1, nil).get().Err, kerr.UnknownMemberID)
		check("sync from non-member")
	})
	t.Run("heartbeat with a stale generation", func(t *testing.T) {
		mustErr(t, "heartbeat", e.c.Heartbeat(testGroup, follower, nil, 7), kerr.IllegalGeneration)
		check("stale heartbeat")
	})
	t.Run("invalid session timeout", func(t *testing.T) {
		pj := &pendingJoin{}
		e.c.HandleJoinGroup(JoinRequest{GroupID: testGroup, ClientID: "c", SessionTimeout: time.Second,
			ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}}, func(r JoinResult) { pj.res = &r })
		mustErr(t, "join", pj.get().Err, kerr.InvalidSessionTimeout)
		check("session timeout")
	})
	t.Run("oversized offset metadata", func(t *testing.T) {
		errs := e.c.CommitOffsets(context.Background(), CommitRequest{GroupID: testGroup, MemberID: follower, GenerationID: 1,
			Offsets: map[TopicPartition]OffsetAndMetadata{{"t", 1}: {Offset: 1, Metadata: string(make([]byte, 5000)), ExpireTimestamp: -1}}})
		mustErr(t, "commit", errs[TopicPartition{"t", 1}], kerr.OffsetMetadataTooLarge)
		check("metadata too large")
	})
	t.Run("delete a non-empty group", func(t *testing.T) {
		mustErr(t, "delete", e.c.DeleteGroups(context.Background(), []string{testGroup})[testGroup], kerr.NonEmptyGroup)
		check("delete")
	})
}

func TestOversizedMemberMetadataFailsTheSync(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = -1 })
	e.log.maxBatch = 10_000
	big := []Protocol{{Name: "range", Metadata: make([]byte, 20_000)}}
	first := e.join("", nil, big...).get()
	j := e.join(first.MemberID, nil, big...)
	e.advance(0)
	r := j.get()
	if r == nil || r.Err != nil {
		t.Fatalf("join %+v", r)
	}
	s := e.sync(r.MemberID, r.GenerationID, map[string][]byte{r.MemberID: []byte("x")}).get()
	// storeGroup's MESSAGE_TOO_LARGE maps to UNKNOWN_SERVER_ERROR, and the group rebalances.
	mustErr(t, "sync", s.Err, kerr.UnknownServerError)
	if n := len(e.log.records(t, e.c.PartitionFor(testGroup))); n != 0 {
		t.Fatalf("%d records written", n)
	}
	if e.state() != PreparingRebalance {
		t.Fatalf("state %s", e.state())
	}
}

func TestStaticMemberRejoinsWithoutRebalanceAndFencesOldID(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = -1 })
	inst := "instance-1"
	j := e.join("", &inst)
	e.advance(0)
	r := j.get()
	if r == nil || r.Err != nil || r.GenerationID != 1 {
		t.Fatalf("join %+v", r)
	}
	old := r.MemberID
	if s := e.sync(old, 1, map[string][]byte{old: []byte("A")}).get(); s.Err != nil {
		t.Fatalf("sync %+v", s)
	}
	// The instance restarts: unknown member id, same instance id, same metadata.
	r2 := e.join("", &inst).get()
	if r2 == nil || r2.Err != nil || r2.GenerationID != 1 || r2.MemberID == old {
		t.Fatalf("static rejoin %+v", r2)
	}
	if e.state() != Stable || e.generation() != 1 {
		t.Fatalf("static rejoin rebalanced: %s gen %d", e.state(), e.generation())
	}
	if s := e.sync(r2.MemberID, 1, nil).get(); s.Err != nil || string(s.Assignment) != "A" {
		t.Fatalf("sync after static rejoin %+v", s)
	}
	mustErr(t, "old id heartbeat", e.c.Heartbeat(testGroup, old, &inst, 1), kerr.FencedInstanceID)
	mustErr(t, "new id heartbeat", e.c.Heartbeat(testGroup, r2.MemberID, &inst, 1), nil)
	errs := e.c.CommitOffsets(context.Background(), CommitRequest{GroupID: testGroup, MemberID: old, GroupInstanceID: &inst,
		GenerationID: 1, Offsets: map[TopicPartition]OffsetAndMetadata{{"t", 0}: {Offset: 1, ExpireTimestamp: -1}}})
	mustErr(t, "fenced commit", errs[TopicPartition{"t", 0}], kerr.FencedInstanceID)
	// Leave by instance id alone (administrative removal).
	top, merrs := e.c.LeaveGroup(testGroup, []MemberIdentity{{GroupInstanceID: &inst}})
	mustErr(t, "leave", top, nil)
	mustErr(t, "leave member", merrs[0], nil)
}

func TestGroupMaxSize(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxSize = 1; c.InitialRebalanceDelay = -1 })
	_, j := e.joinNew()
	_ = j
	id2 := e.join("", nil).get().MemberID
	r := e.join(id2, nil).get()
	mustErr(t, "second member", r.Err, kerr.GroupMaxSizeReached)
}

func TestLoadAfterFailoverAndExpiry(t *testing.T) {
	e := newEnv(t, nil)
	leader, _ := e.stableGroup()
	commit := func(c *Coordinator, group string, gen int32, member string, off int64) *kerr.Error {
		errs := c.CommitOffsets(context.Background(), CommitRequest{GroupID: group, MemberID: member, GenerationID: gen,
			Offsets: map[TopicPartition]OffsetAndMetadata{{"t", 0}: {Offset: off, LeaderEpoch: -1, CommitTimestamp: e.clock.Now().UnixMilli(), ExpireTimestamp: -1}}})
		return errs[TopicPartition{"t", 0}]
	}
	mustErr(t, "commit", commit(e.c, testGroup, 1, leader, 100), nil)
	mustErr(t, "standalone commit", commit(e.c, "standalone", -1, "", 7), nil)

	// A second coordinator over the same log (the new leader) rebuilds both groups.
	c2 := New(Config{NumPartitions: 4, Clock: e.clock, Logger: e.c.logger}, e.log)
	defer c2.Shutdown()
	e.log.mu.Lock()
	for p := int32(0); p < 4; p++ {
		e.log.leaders[p] = 2
	}
	e.log.mu.Unlock()
	for p := int32(0); p < 4; p++ {
		c2.OnElection(p, 2)
	}
	c2.wg.Wait()
	offs, err := c2.FetchOffsets(testGroup, nil, false)
	mustErr(t, "fetch after load", err, nil)
	if len(offs) != 1 || offs[0].Offset != 100 {
		t.Fatalf("offsets after load %+v", offs)
	}
	s, err := c2.DescribeGroup(testGroup)
	if err != nil || s.State != "Stable" || len(s.Members) != 2 || s.Protocol != "range" {
		t.Fatalf("describe after load %+v %v", s, err)
	}
	// The old coordinator resigns: its groups are gone and waiting calls learn it.
	e.c.OnResignation(e.c.PartitionFor(testGroup))
	e.log.mu.Lock()
	delete(e.log.leaders, e.c.PartitionFor(testGroup))
	e.log.mu.Unlock()
	mustErr(t, "heartbeat on the old coordinator", e.c.Heartbeat(testGroup, leader, nil, 1), kerr.NotCoordinator)
	e.log.mu.Lock()
	e.log.leaders[e.c.PartitionFor(testGroup)] = 2 // c2 leads it (one shared fake log)
	e.log.mu.Unlock()

	// Expiry: the standalone group's offset expires after offsets.retention.minutes.
	e.clock.mu.Lock()
	e.clock.now = e.clock.now.Add(7*24*time.Hour + time.Minute)
	e.clock.mu.Unlock()
	if n := c2.CleanupGroupMetadata(); n < 1 {
		t.Fatalf("expired %d offsets", n)
	}
	if s, _ := c2.DescribeGroup("standalone"); s.State != "Dead" {
		t.Fatalf("standalone group state %s after expiry", s.State)
	}
	var tomb bool
	for _, r := range e.log.records(t, PartitionFor("standalone", 4)) {
		if r.IsOffset && r.Group == "standalone" && r.Offset == nil {
			tomb = true
		}
	}
	if !tomb {
		t.Fatalf("no offset tombstone for the expired standalone offset")
	}
}

func TestLoadInProgressAndNotCoordinator(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.NumPartitions = 1 })
	e.log.mu.Lock()
	delete(e.log.leaders, 0)
	e.log.mu.Unlock()
	mustErr(t, "not leader", e.c.Heartbeat(testGroup, "m", nil, 1), kerr.NotCoordinator)
	e.log.mu.Lock()
	e.log.leaders[0] = 5
	e.log.mu.Unlock()
	_, err := e.c.FetchOffsets(testGroup, nil, false)
	mustErr(t, "new leader epoch", err, kerr.CoordinatorLoadInProgress)
	e.settle()
	_, err = e.c.FetchOffsets(testGroup, nil, false)
	mustErr(t, "loaded", err, nil)
}

func TestDeleteGroupsAndOffsetDelete(t *testing.T) {
	e := newEnv(t, nil)
	errs := e.c.CommitOffsets(context.Background(), CommitRequest{GroupID: "solo", GenerationID: -1,
		Offsets: map[TopicPartition]OffsetAndMetadata{{"t", 0}: {Offset: 1, ExpireTimestamp: -1}, {"u", 0}: {Offset: 2, ExpireTimestamp: -1}}})
	mustErr(t, "commit", errs[TopicPartition{"t", 0}], nil)
	top, perrs := e.c.DeleteOffsets(context.Background(), "solo", []TopicPartition{{"u", 0}})
	mustErr(t, "offset delete", top, nil)
	mustErr(t, "offset delete u-0", perrs[TopicPartition{"u", 0}], nil)
	offs, _ := e.c.FetchOffsets("solo", nil, false)
	if len(offs) != 1 || offs[0].TP.Topic != "t" {
		t.Fatalf("offsets %+v", offs)
	}
	res := e.c.DeleteGroups(context.Background(), []string{"solo", "missing"})
	mustErr(t, "delete solo", res["solo"], nil)
	mustErr(t, "delete missing", res["missing"], kerr.GroupIDNotFound)
	offs, _ = e.c.FetchOffsets("solo", []TopicPartition{{"t", 0}}, false)
	if offs[0].Offset != -1 {
		t.Fatalf("offset survived group deletion: %+v", offs)
	}
}

func TestMemberThatNeverSyncsIsRemoved(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = -1 })
	e.rebalanceTimeout = 5 * time.Second // below the 10 s session: the DelayedSync acts first
	a, ja := e.joinNew()
	e.advance(0)
	b, jb := e.joinNew()
	// b's join moved the group to PreparingRebalance; a rejoins, then both get generation 2.
	if r := ja.get(); r == nil || r.GenerationID != 1 {
		t.Fatalf("a's first join %+v", r)
	}
	ja2 := e.join(a, nil)
	ra, rb := ja2.get(), jb.get()
	if ra == nil || rb == nil || ra.GenerationID != 2 || rb.GenerationID != 2 {
		t.Fatalf("joins %+v %+v", ra, rb)
	}
	leader := ra.LeaderID
	other := a
	if leader == a {
		other = b
	}
	// Only the leader syncs; the DelayedSync (rebalance timeout, 5 s) removes the other.
	e.sync(leader, 2, map[string][]byte{leader: []byte("x"), other: []byte("y")})
	e.advance(4 * time.Second)
	mustErr(t, "leader heartbeat", e.c.Heartbeat(testGroup, leader, nil, 2), nil)
	e.advance(2 * time.Second)
	mustErr(t, "heartbeat of the member that never synced", e.c.Heartbeat(testGroup, other, nil, 2), kerr.UnknownMemberID)
	mustErr(t, "leader heartbeat", e.c.Heartbeat(testGroup, leader, nil, 2), kerr.RebalanceInProgress)
	if e.state() != PreparingRebalance {
		t.Fatalf("state %s after the pending sync expired", e.state())
	}
}

func TestPendingMemberExpires(t *testing.T) {
	e := newEnv(t, nil)
	first := e.join("", nil).get()
	mustErr(t, "first join", first.Err, kerr.MemberIDRequired)
	e.advance(11 * time.Second) // the session timeout of the pending member
	r := e.join(first.MemberID, nil).get()
	mustErr(t, "rejoin after the pending member expired", r.Err, kerr.UnknownMemberID)
}

func TestInitialDelayIsCappedByRebalanceTimeout(t *testing.T) {
	// Every new member extends group.initial.rebalance.delay.ms, up to the rebalance timeout.
	e := newEnv(t, nil)
	var joins []*pendingJoin
	for i := 0; i < 10; i++ {
		_, j := e.joinNew()
		joins = append(joins, j)
		e.advance(3 * time.Second)
		if e.state() != PreparingRebalance {
			break
		}
	}
	// Rebalance timeout 20 s: 3 s + extensions ≤ 20 s in total.
	e.advance(20 * time.Second)
	for i, j := range joins {
		if r := j.get(); r == nil || r.Err != nil {
			t.Fatalf("join %d: %+v", i, r)
		}
	}
}

func TestSweepLoadsAndUnloadsWithLeadership(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.NumPartitions = 2 })
	e.log.mu.Lock()
	delete(e.log.leaders, 1)
	e.log.mu.Unlock()
	e.c.sweepLeadership()
	e.settle()
	if e.c.Loaded(1) {
		t.Fatalf("partition 1 still loaded after losing leadership")
	}
	e.log.mu.Lock()
	e.log.leaders[1] = 7
	e.log.mu.Unlock()
	e.c.sweepLeadership()
	e.settle()
	if !e.c.Loaded(1) || !e.c.Loaded(0) {
		t.Fatalf("loaded: p0 %v p1 %v", e.c.Loaded(0), e.c.Loaded(1))
	}
}
