package group

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

const (
	testTxnID = "txn-1"
	testPID   = int64(4000)
)

func (e *env) txnCommit(group string, pid int64, memberID string, instanceID *string, gen int32, offs map[TopicPartition]int64) map[TopicPartition]*kerr.Error {
	e.t.Helper()
	req := TxnCommitRequest{GroupID: group, TransactionalID: testTxnID, ProducerID: pid, ProducerEpoch: 3,
		MemberID: memberID, GroupInstanceID: instanceID, GenerationID: gen, Offsets: map[TopicPartition]OffsetAndMetadata{}}
	for tp, o := range offs {
		req.Offsets[tp] = OffsetAndMetadata{Offset: o, LeaderEpoch: 7, Metadata: "m", CommitTimestamp: e.clock.Now().UnixMilli(), ExpireTimestamp: -1}
	}
	return e.c.TxnCommitOffsets(context.Background(), req)
}

func (e *env) plainCommit(group string, offs map[TopicPartition]int64) map[TopicPartition]*kerr.Error {
	e.t.Helper()
	req := CommitRequest{GroupID: group, GenerationID: -1, Offsets: map[TopicPartition]OffsetAndMetadata{}}
	for tp, o := range offs {
		req.Offsets[tp] = OffsetAndMetadata{Offset: o, LeaderEpoch: -1, CommitTimestamp: e.clock.Now().UnixMilli(), ExpireTimestamp: -1}
	}
	return e.c.CommitOffsets(context.Background(), req)
}

func allNil(t *testing.T, what string, errs map[TopicPartition]*kerr.Error) {
	t.Helper()
	for tp, err := range errs {
		if err != nil {
			t.Fatalf("%s %v: %v", what, tp, err)
		}
	}
}

func allWant(t *testing.T, what string, errs map[TopicPartition]*kerr.Error, want *kerr.Error) {
	t.Helper()
	if len(errs) == 0 {
		t.Fatalf("%s: no results", what)
	}
	for tp, err := range errs {
		if err != want {
			t.Fatalf("%s %v: %v, want %v", what, tp, err, want)
		}
	}
}

// fetchOne returns the offset and error OffsetFetch gives for tp.
func fetchOne(t *testing.T, c *Coordinator, group string, tp TopicPartition, requireStable bool) (int64, *kerr.Error) {
	t.Helper()
	offs, err := c.FetchOffsets(group, []TopicPartition{tp}, requireStable)
	if err != nil {
		t.Fatalf("fetch %s: %v", group, err)
	}
	return offs[0].Offset, offs[0].Err
}

func TestTxnOffsetCommitPendingUntilCommitMarker(t *testing.T) {
	e := newEnv(t, nil)
	tp := TopicPartition{"t", 0}
	p := e.c.PartitionFor("tg")
	allNil(t, "txn commit", e.txnCommit("tg", testPID, "", nil, -1, map[TopicPartition]int64{tp: 10}))

	// The batch is transactional, of the producer, with base sequence 0.
	e.log.mu.Lock()
	last := recordbatch.Batch(e.log.batches[p][len(e.log.batches[p])-1])
	verified, guards := e.log.verified, e.log.guards
	e.log.mu.Unlock()
	if !last.Transactional() || last.Control() || last.ProducerID() != testPID || last.ProducerEpoch() != 3 || last.BaseSequence() != 0 {
		t.Fatalf("batch header %+v", last.Header())
	}
	if len(verified) != 1 || verified[0] != testTxnID || len(guards) != 1 || guards[0] == nil {
		t.Fatalf("verification: ids %v guards %v", verified, guards)
	}

	// Pending: invisible to OffsetFetch; unstable with require_stable.
	if o, err := fetchOne(t, e.c, "tg", tp, false); o != -1 || err != nil {
		t.Fatalf("fetch while pending: %d %v", o, err)
	}
	if o, err := fetchOne(t, e.c, "tg", tp, true); o != -1 || err != kerr.UnstableOffsetCommit {
		t.Fatalf("stable fetch while pending: %d %v", o, err)
	}
	if all, _ := e.c.FetchOffsets("tg", nil, true); len(all) != 0 {
		t.Fatalf("all-partitions fetch lists pending offsets: %+v", all)
	}
	// A marker of another partition or another producer changes nothing.
	e.c.ScheduleHandleTxnCompletion(testPID, []int32{(p + 1) % e.c.NumPartitions()}, true)
	e.c.ScheduleHandleTxnCompletion(testPID+1, []int32{p}, true)
	if _, err := fetchOne(t, e.c, "tg", tp, true); err != kerr.UnstableOffsetCommit {
		t.Fatalf("stable fetch after unrelated markers: %v", err)
	}

	e.log.appendMarker(t, p, testPID, 3, true)
	e.c.ScheduleHandleTxnCompletion(testPID, []int32{p}, true)
	if o, err := fetchOne(t, e.c, "tg", tp, true); o != 10 || err != nil {
		t.Fatalf("fetch after commit: %d %v", o, err)
	}
	if len(e.c.pendingTxnProducers("tg")) != 0 {
		t.Fatalf("producer still pending")
	}
	e.c.mu.Lock()
	open := len(e.c.mu.openGroupsForProducer)
	e.c.mu.Unlock()
	if open != 0 {
		t.Fatalf("openGroupsForProducer keeps %d producers", open)
	}
}

func TestTxnOffsetCommitAbortKeepsCommittedOffset(t *testing.T) {
	e := newEnv(t, nil)
	tp := TopicPartition{"t", 0}
	p := e.c.PartitionFor("tg")
	allNil(t, "plain commit", e.plainCommit("tg", map[TopicPartition]int64{tp: 5}))
	allNil(t, "txn commit", e.txnCommit("tg", testPID, "", nil, -1, map[TopicPartition]int64{tp: 10, {"t", 1}: 11}))
	if o, err := fetchOne(t, e.c, "tg", tp, false); o != 5 || err != nil {
		t.Fatalf("fetch while pending: %d %v", o, err)
	}
	e.log.appendMarker(t, p, testPID, 3, false)
	e.c.ScheduleHandleTxnCompletion(testPID, []int32{p}, false)
	if o, err := fetchOne(t, e.c, "tg", tp, true); o != 5 || err != nil {
		t.Fatalf("fetch after abort: %d %v", o, err)
	}
	if o, err := fetchOne(t, e.c, "tg", TopicPartition{"t", 1}, true); o != -1 || err != nil {
		t.Fatalf("aborted partition: %d %v", o, err)
	}
}

// TestTxnOffsetCommitPrecedence: of a plain and a transactional commit of one partition, the
// one appended later wins once the transaction commits (GroupMetadata.completePendingTxnOffsetCommit).
func TestTxnOffsetCommitPrecedence(t *testing.T) {
	e := newEnv(t, nil)
	tp := TopicPartition{"t", 0}
	p := e.c.PartitionFor("tg")

	// Transactional first, plain after: the plain offset stays after the commit marker.
	allNil(t, "txn", e.txnCommit("tg", testPID, "", nil, -1, map[TopicPartition]int64{tp: 10}))
	allNil(t, "plain", e.plainCommit("tg", map[TopicPartition]int64{tp: 20}))
	if _, err := fetchOne(t, e.c, "tg", tp, true); err != kerr.UnstableOffsetCommit {
		t.Fatalf("stable fetch with a pending transaction: %v", err)
	}
	e.log.appendMarker(t, p, testPID, 3, true)
	e.c.ScheduleHandleTxnCompletion(testPID, []int32{p}, true)
	if o, _ := fetchOne(t, e.c, "tg", tp, true); o != 20 {
		t.Fatalf("plain commit appended after the transactional one: offset %d, want 20", o)
	}

	// Plain first, transactional after: the transactional offset wins at the marker.
	allNil(t, "txn 2", e.txnCommit("tg", testPID, "", nil, -1, map[TopicPartition]int64{tp: 30}))
	e.log.appendMarker(t, p, testPID, 3, true)
	e.c.ScheduleHandleTxnCompletion(testPID, []int32{p}, true)
	if o, _ := fetchOne(t, e.c, "tg", tp, true); o != 30 {
		t.Fatalf("transactional commit appended last: offset %d, want 30", o)
	}

	// A reload of the same log reaches the same answer.
	c2 := e.reload(t)
	if o, err := fetchOne(t, c2, "tg", tp, true); o != 30 || err != nil {
		t.Fatalf("after reload: %d %v", o, err)
	}
}

// reload builds a second coordinator over the same log (a new leader) and loads every partition.
func (e *env) reload(t *testing.T) *Coordinator {
	t.Helper()
	c2 := New(Config{NumPartitions: e.c.NumPartitions(), Clock: e.clock, Logger: e.c.logger}, e.log)
	t.Cleanup(c2.Shutdown)
	e.log.mu.Lock()
	for p := int32(0); p < e.c.NumPartitions(); p++ {
		e.log.leaders[p]++
	}
	epochs := make(map[int32]int32, len(e.log.leaders))
	for p, ep := range e.log.leaders {
		epochs[p] = ep
	}
	e.log.mu.Unlock()
	for p, ep := range epochs {
		c2.OnElection(p, ep)
	}
	c2.wg.Wait()
	for p := range epochs {
		if !c2.Loaded(p) {
			t.Fatalf("partition %d not loaded", p)
		}
	}
	return c2
}

func TestLoadTransactionalOffsetsWithMarkers(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.NumPartitions = 1 })
	tp0, tp1, tp2, tp3 := TopicPartition{"t", 0}, TopicPartition{"t", 1}, TopicPartition{"t", 2}, TopicPartition{"t", 3}
	const a, b, c, d = int64(100), int64(200), int64(300), int64(400)
	allNil(t, "plain", e.plainCommit("g1", map[TopicPartition]int64{tp0: 5, tp3: 6}))
	allNil(t, "txn a", e.txnCommit("g1", a, "", nil, -1, map[TopicPartition]int64{tp0: 10}))
	allNil(t, "txn b", e.txnCommit("g1", b, "", nil, -1, map[TopicPartition]int64{tp1: 20}))
	allNil(t, "txn c", e.txnCommit("g1", c, "", nil, -1, map[TopicPartition]int64{tp2: 30}))
	allNil(t, "txn c in a group with nothing else", e.txnCommit("g2", c, "", nil, -1, map[TopicPartition]int64{tp0: 31}))
	allNil(t, "txn d", e.txnCommit("g1", d, "", nil, -1, map[TopicPartition]int64{tp3: 40}))
	allNil(t, "plain after d", e.plainCommit("g1", map[TopicPartition]int64{tp3: 41}))
	e.log.appendMarker(t, 0, a, 3, true)
	e.log.appendMarker(t, 0, b, 3, false)
	e.log.appendMarker(t, 0, d, 3, true)
	// A malformed control record (key of 2 bytes) still ends the producer's pending offsets,
	// as Kafka's loader drops them on anything that is not COMMIT.
	bad, err := recordbatch.Build(recordbatch.Header{Attributes: recordbatch.AttrTransactional | recordbatch.AttrControl,
		ProducerID: 999, ProducerEpoch: 0, BaseSequence: -1}, []recordbatch.Record{{Key: []byte{0, 0}}}, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.log.Append(context.Background(), 0, bad, true, 0); err != nil {
		t.Fatal(err)
	}

	c2 := e.reload(t)
	for _, tc := range []struct {
		group  string
		tp     TopicPartition
		offset int64
		err    *kerr.Error
	}{
		{"g1", tp0, 10, nil},                       // committed transaction, appended after the plain 5
		{"g1", tp1, -1, nil},                       // aborted
		{"g1", tp2, -1, kerr.UnstableOffsetCommit}, // no marker yet: pending
		{"g1", tp3, 41, nil},                       // plain commit appended after d's record wins
		{"g2", tp0, -1, kerr.UnstableOffsetCommit}, // a group known only by its pending offsets
	} {
		t.Run(fmt.Sprintf("%s-%v", tc.group, tc.tp), func(t *testing.T) {
			if o, err := fetchOne(t, c2, tc.group, tc.tp, true); o != tc.offset || err != tc.err {
				t.Fatalf("offset %d err %v, want %d %v", o, err, tc.offset, tc.err)
			}
		})
	}
	if s, _ := c2.DescribeGroup("g2"); s.State != "Empty" {
		t.Fatalf("g2 state %s", s.State)
	}
	// The pending transaction ends after the load: both groups learn it from one marker.
	e.log.appendMarker(t, 0, c, 3, true)
	c2.ScheduleHandleTxnCompletion(c, []int32{0}, true)
	if o, err := fetchOne(t, c2, "g1", tp2, true); o != 30 || err != nil {
		t.Fatalf("g1 after the late commit: %d %v", o, err)
	}
	if o, err := fetchOne(t, c2, "g2", tp0, true); o != 31 || err != nil {
		t.Fatalf("g2 after the late commit: %d %v", o, err)
	}
}

func TestTxnOffsetCommitValidation(t *testing.T) {
	e := newEnv(t, nil)
	leader, _ := e.stableGroup()
	tp := TopicPartition{"t", 0}
	one := map[TopicPartition]int64{tp: 1}
	before := len(e.log.records(t, e.c.PartitionFor(testGroup)))
	for _, tc := range []struct {
		name     string
		group    string
		member   string
		instance *string
		gen      int32
		want     *kerr.Error
	}{
		{"unknown member", testGroup, "stranger", nil, 1, kerr.UnknownMemberID},
		{"illegal generation", testGroup, leader, nil, 7, kerr.IllegalGeneration},
		{"unknown instance id", testGroup, leader, ptr("nobody"), 1, kerr.UnknownMemberID},
		{"empty group id", "", "", nil, -1, kerr.InvalidGroupID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allWant(t, tc.name, e.txnCommit(tc.group, testPID, tc.member, tc.instance, tc.gen, one), tc.want)
		})
	}
	if n := len(e.log.records(t, e.c.PartitionFor(testGroup))); n != before {
		t.Fatalf("%d records written by refused commits", n-before)
	}
	// Pre-v3 producers send no member or generation: accepted even by a group with members.
	allNil(t, "anonymous", e.txnCommit(testGroup, testPID, "", nil, -1, one))
	// The current member of the current generation, in CompletingRebalance too (Kafka does
	// not look at the state for transactional commits).
	allNil(t, "member", e.txnCommit(testGroup, testPID, leader, nil, 1, one))

	t.Run("metadata too large", func(t *testing.T) {
		req := TxnCommitRequest{GroupID: testGroup, TransactionalID: testTxnID, ProducerID: testPID, ProducerEpoch: 3, GenerationID: -1,
			Offsets: map[TopicPartition]OffsetAndMetadata{tp: {Offset: 1, Metadata: string(make([]byte, 5000)), ExpireTimestamp: -1}}}
		allWant(t, "too large", e.c.TxnCommitOffsets(context.Background(), req), kerr.OffsetMetadataTooLarge)
	})
}

func TestTxnOffsetCommitFencedStaticMember(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = -1 })
	inst := "instance-1"
	j := e.join("", &inst)
	e.advance(0)
	r := j.get()
	if r == nil || r.Err != nil {
		t.Fatalf("join %+v", r)
	}
	old := r.MemberID
	e.sync(old, 1, map[string][]byte{old: []byte("A")})
	r2 := e.join("", &inst).get() // the instance restarts with a new member id
	if r2 == nil || r2.Err != nil || r2.MemberID == old {
		t.Fatalf("static rejoin %+v", r2)
	}
	allWant(t, "fenced", e.txnCommit(testGroup, testPID, old, &inst, 1, map[TopicPartition]int64{{"t", 0}: 1}), kerr.FencedInstanceID)
	allNil(t, "current", e.txnCommit(testGroup, testPID, r2.MemberID, &inst, 1, map[TopicPartition]int64{{"t", 0}: 1}))
}

func TestTxnOffsetCommitCoordinatorErrors(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.NumPartitions = 1 })
	one := map[TopicPartition]int64{{"t", 0}: 1}
	for _, tc := range []struct {
		verify error
		want   *kerr.Error
	}{
		{kerr.InvalidTxnState, kerr.InvalidTxnState},
		{kerr.InvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{fmt.Errorf("verify: %w", kerr.NetworkException), kerr.CoordinatorLoadInProgress},
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator},
	} {
		t.Run(tc.want.Message, func(t *testing.T) {
			e.log.mu.Lock()
			e.log.verifyErr = tc.verify
			e.log.mu.Unlock()
			allWant(t, "verification", e.txnCommit("tg", testPID, "", nil, -1, one), tc.want)
		})
	}
	e.log.mu.Lock()
	e.log.verifyErr = nil
	e.log.failWith = fmt.Errorf("append: %w", kerr.NotEnoughReplicas)
	e.log.mu.Unlock()
	allWant(t, "append", e.txnCommit("tg", testPID, "", nil, -1, one), kerr.CoordinatorNotAvailable)
	// A failed append leaves nothing pending.
	if _, err := fetchOne(t, e.c, "tg", TopicPartition{"t", 0}, true); err != nil {
		t.Fatalf("stable fetch after a failed append: %v", err)
	}
	if n := len(e.c.pendingTxnProducers("tg")); n != 0 {
		t.Fatalf("%d producers pending after a failed append", n)
	}
	e.log.mu.Lock()
	e.log.failWith = nil
	delete(e.log.leaders, 0)
	e.log.mu.Unlock()
	allWant(t, "not leader", e.txnCommit("tg", testPID, "", nil, -1, one), kerr.NotCoordinator)
	e.log.mu.Lock()
	e.log.leaders[0] = 9
	e.log.mu.Unlock()
	allWant(t, "new leader epoch", e.txnCommit("tg", testPID, "", nil, -1, one), kerr.CoordinatorLoadInProgress)
}

// TestMarkerDuringLoadIsReplayed: a marker that lands while the partition loads (after the
// loader read past its place) is applied once the groups are in the cache.
func TestMarkerDuringLoadIsReplayed(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.NumPartitions = 1 })
	tp := TopicPartition{"t", 0}
	allNil(t, "txn", e.txnCommit("tg", testPID, "", nil, -1, map[TopicPartition]int64{tp: 10}))

	c2 := New(Config{NumPartitions: 1, Clock: e.clock, Logger: e.c.logger}, e.log)
	t.Cleanup(c2.Shutdown)
	gate := make(chan struct{})
	e.log.mu.Lock()
	e.log.leaders[0] = 2
	e.log.offsetsGate = gate
	e.log.mu.Unlock()
	c2.OnElection(0, 2)
	gate <- struct{}{} // the loader's first look at the log end; it then reads the record
	// and waits in its second look, before its groups are in the cache.
	c2.ScheduleHandleTxnCompletion(testPID, []int32{0}, true)
	e.log.mu.Lock()
	e.log.offsetsGate = nil
	e.log.mu.Unlock()
	close(gate)
	c2.wg.Wait()
	if o, err := fetchOne(t, c2, "tg", tp, true); o != 10 || err != nil {
		t.Fatalf("after the replayed marker: %d %v", o, err)
	}
}

func TestPendingTxnOffsetsHoldEmptyGroupAndDelete(t *testing.T) {
	e := newEnv(t, nil)
	tp, other := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	p := e.c.PartitionFor("tg")
	allNil(t, "txn", e.txnCommit("tg", testPID, "", nil, -1, map[TopicPartition]int64{tp: 10}))
	// Retention passes: the group holds no committed offset but a pending one, and stays.
	e.clock.mu.Lock()
	e.clock.now = e.clock.now.Add(8 * 24 * time.Hour)
	e.clock.mu.Unlock()
	e.c.CleanupGroupMetadata()
	if s, _ := e.c.DescribeGroup("tg"); s.State != "Empty" {
		t.Fatalf("group with pending offsets expired: %s", s.State)
	}
	// OffsetDelete drops the pending offset of the partition; the producer's (now empty)
	// entry keeps the group until its marker.
	top, perrs := e.c.DeleteOffsets(context.Background(), "tg", []TopicPartition{tp})
	mustErr(t, "offset delete", top, nil)
	mustErr(t, "offset delete tp", perrs[tp], nil)
	if _, err := fetchOne(t, e.c, "tg", tp, true); err != nil {
		t.Fatalf("stable fetch after offset delete: %v", err)
	}
	e.c.ScheduleHandleTxnCompletion(testPID, []int32{p}, true)
	if o, _ := fetchOne(t, e.c, "tg", tp, false); o != -1 {
		t.Fatalf("deleted pending offset applied by the marker: %d", o)
	}

	// DeleteGroups of an Empty group with committed and pending offsets deletes it.
	allNil(t, "plain", e.plainCommit("tg2", map[TopicPartition]int64{tp: 1}))
	allNil(t, "txn 2", e.txnCommit("tg2", testPID+1, "", nil, -1, map[TopicPartition]int64{tp: 2, other: 3}))
	mustErr(t, "delete", e.c.DeleteGroups(context.Background(), []string{"tg2"})["tg2"], nil)
	e.c.ScheduleHandleTxnCompletion(testPID+1, []int32{e.c.PartitionFor("tg2")}, true)
	if o, _ := fetchOne(t, e.c, "tg2", other, false); o != -1 {
		t.Fatalf("marker revived a deleted group: %d", o)
	}
	e.c.mu.Lock()
	open := len(e.c.mu.openGroupsForProducer)
	e.c.mu.Unlock()
	if open != 0 {
		t.Fatalf("openGroupsForProducer keeps %d producers after their markers", open)
	}
}

func TestResignationForgetsOpenGroups(t *testing.T) {
	e := newEnv(t, nil)
	allNil(t, "txn", e.txnCommit("tg", testPID, "", nil, -1, map[TopicPartition]int64{{"t", 0}: 1}))
	e.c.OnResignation(e.c.PartitionFor("tg"))
	e.c.mu.Lock()
	n := len(e.c.mu.openGroupsForProducer)
	e.c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d producers still open after resignation", n)
	}
}

func ptr(s string) *string { return &s }
