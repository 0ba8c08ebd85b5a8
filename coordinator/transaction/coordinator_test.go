package transaction

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var bg = context.Background()

func TestInitProducerIDNewAndBump(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	if pid != 1000 || epoch != 0 {
		t.Fatalf("new id: pid %d epoch %d", pid, epoch)
	}
	pid2, epoch2 := e.init("t1")
	if pid2 != pid || epoch2 != 1 {
		t.Fatalf("bump: pid %d epoch %d", pid2, epoch2)
	}
	recs := e.log.records(t, e.c.PartitionFor("t1"))
	if len(recs) != 2 || recs[1].m.state != Empty || recs[1].m.producerEpoch != 1 || recs[1].m.txnTimeoutMs != 60000 {
		t.Fatalf("records %v", recs)
	}

	_, _, code := e.c.HandleInitProducerID(bg, "t1", 0, -1, -1)
	expectCode(t, "timeout 0", code, kerr.InvalidTransactionTimeout)
	_, _, code = e.c.HandleInitProducerID(bg, "t1", int32((16 * time.Minute).Milliseconds()), -1, -1)
	expectCode(t, "timeout above max", code, kerr.InvalidTransactionTimeout)
	_, _, code = e.c.HandleInitProducerID(bg, "", 1000, -1, -1)
	expectCode(t, "empty id", code, kerr.InvalidRequest)

	e.pids.err = errors.New("zk down")
	_, _, code = e.c.HandleInitProducerID(bg, "t-new", 1000, -1, -1)
	expectCode(t, "pid generation failure", code, kerr.UnknownServerError)
}

func TestInitProducerIDEpochExhaustion(t *testing.T) {
	e := newEnv(t)
	pid, _ := e.init("t1")
	m := e.metadata("t1")
	m.mu.Lock()
	m.producerEpoch = math.MaxInt16 - 1
	m.mu.Unlock()
	newPID, epoch := e.init("t1")
	if newPID == pid || epoch != 0 {
		t.Fatalf("exhausted epoch: pid %d epoch %d (old pid %d)", newPID, epoch, pid)
	}
	m.mu.Lock()
	last, lastEpoch := m.lastProducerID, m.lastProducerEpoch
	m.mu.Unlock()
	if last != pid || lastEpoch != -1 {
		t.Fatalf("without an expected epoch the last epoch is not kept: last pid %d epoch %d", last, lastEpoch)
	}
}

func TestInitProducerIDKIP360(t *testing.T) {
	e := newEnv(t)
	pid, _ := e.init("t1") // epoch 0
	// Recover after an error: expected = current → bump, remembering the old epoch.
	p, ep, code := e.c.HandleInitProducerID(bg, "t1", 60000, pid, 0)
	if code != 0 || p != pid || ep != 1 {
		t.Fatalf("bump with expected epoch: %d %d %v", p, ep, kerr.ErrorForCode(code))
	}
	// The answer was lost and the client retries with the same expected epoch: same answer.
	p, ep, code = e.c.HandleInitProducerID(bg, "t1", 60000, pid, 0)
	if code != 0 || p != pid || ep != 1 {
		t.Fatalf("retried bump: %d %d %v", p, ep, kerr.ErrorForCode(code))
	}
	// A zombie with an older epoch is fenced; so is a wrong producer id.
	_, _, code = e.c.HandleInitProducerID(bg, "t1", 60000, pid, 5)
	expectCode(t, "stale expected epoch", code, kerr.ProducerFenced)
	_, _, code = e.c.HandleInitProducerID(bg, "t1", 60000, pid+77, 1)
	expectCode(t, "wrong expected producer id", code, kerr.ProducerFenced)

	// Exhausted epoch with the matching expected epoch rotates and records the last epoch;
	// a retry of that call (old pid, exhausted epoch) answers the new id again.
	m := e.metadata("t1")
	m.mu.Lock()
	m.producerEpoch = math.MaxInt16 - 1
	m.mu.Unlock()
	newPID, ep, code := e.c.HandleInitProducerID(bg, "t1", 60000, pid, math.MaxInt16-1)
	if code != 0 || newPID == pid || ep != 0 {
		t.Fatalf("rotation: %d %d %v", newPID, ep, kerr.ErrorForCode(code))
	}
	p, ep, code = e.c.HandleInitProducerID(bg, "t1", 60000, pid, math.MaxInt16-1)
	if code != 0 || p != newPID || ep != 0 {
		t.Fatalf("retried rotation: %d %d %v", p, ep, kerr.ErrorForCode(code))
	}
	// An unknown id with an expected pid (UNKNOWN_PRODUCER_ID recovery) gets a fresh id.
	p, ep, code = e.c.HandleInitProducerID(bg, "t2", 60000, 4242, 3)
	if code != 0 || ep != 0 || p == 4242 {
		t.Fatalf("fresh id with an expected pid: %d %d %v", p, ep, kerr.ErrorForCode(code))
	}
}

func TestCommitFlow(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"a": {0, 1}, "b": {0}}), nil)
	st, _, _, parts, _ := e.snapshot("t1")
	if st != Ongoing || parts != "[a-0,a-1,b-0]" {
		t.Fatalf("after add: %s %s", st, parts)
	}
	nrec := len(e.log.records(t, e.c.PartitionFor("t1")))
	expectCode(t, "re-add is answered at once", e.add("t1", pid, epoch, map[string][]int32{"a": {1}}), nil)
	if n := len(e.log.records(t, e.c.PartitionFor("t1"))); n != nrec {
		t.Fatalf("re-adding known partitions wrote a record")
	}
	expectCode(t, "add offsets partition", e.add("t1", pid, epoch, map[string][]int32{"__consumer_offsets": {7}}), nil)

	v := e.c.HandleVerifyPartitions(bg, "t1", pid, epoch, map[string][]int32{"a": {0, 2}})
	if v["a"][0] != 0 || v["a"][2] != kerr.InvalidTxnState.Code {
		t.Fatalf("verify: %v", v)
	}
	v = e.c.HandleVerifyPartitions(bg, "t1", pid, epoch+1, map[string][]int32{"a": {0}})
	if v["a"][0] != kerr.ProducerFenced.Code {
		t.Fatalf("verify with another epoch: %v", v)
	}
	v = e.c.HandleVerifyPartitions(bg, "t1", pid+1, epoch, map[string][]int32{"a": {0}})
	if v["a"][0] != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("verify with another pid: %v", v)
	}

	expectCode(t, "commit", e.end("t1", pid, epoch, true), nil)
	st, _, _, _, pending := e.snapshot("t1")
	if st != PrepareCommit || !pending {
		t.Fatalf("after EndTxn: %s pending=%v", st, pending)
	}
	recs := e.log.records(t, e.c.PartitionFor("t1"))
	if last := recs[len(recs)-1].m; last.state != PrepareCommit || len(last.topicPartitions) != 4 {
		t.Fatalf("PrepareCommit record: %s", last)
	}
	// While markers are out: retried commit waits, abort is refused, other calls wait.
	expectCode(t, "retried commit during PrepareCommit", e.end("t1", pid, epoch, true), kerr.ConcurrentTransactions)
	expectCode(t, "abort during PrepareCommit", e.end("t1", pid, epoch, false), kerr.ConcurrentTransactions) // pending Complete*
	expectCode(t, "add during PrepareCommit", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), kerr.ConcurrentTransactions)
	_, _, code := e.c.HandleInitProducerID(bg, "t1", 60000, -1, -1)
	expectCode(t, "init during PrepareCommit", code, kerr.ConcurrentTransactions)
	v = e.c.HandleVerifyPartitions(bg, "t1", pid, epoch, map[string][]int32{"a": {0}})
	if v["a"][0] != kerr.ConcurrentTransactions.Code {
		t.Fatalf("verify during PrepareCommit: %v", v)
	}

	e.pump(e.c)
	sent := e.sender.requests()
	if len(sent) != 3 {
		t.Fatalf("want one request per broker (1, 2, 3), got %d", len(sent))
	}
	for _, s := range sent {
		if s.req.Version != 1 || len(s.req.Markers) != 1 {
			t.Fatalf("request to %d: %+v", s.broker, s.req)
		}
		mk := s.req.Markers[0]
		if !mk.Committed || mk.ProducerID != pid || mk.ProducerEpoch != epoch || mk.CoordinatorEpoch != 1 {
			t.Fatalf("marker %+v", mk)
		}
		if s.broker == 1 && (len(mk.Topics) != 2 || mk.Topics[0].Topic != "a" || mk.Topics[1].Topic != "b") {
			t.Fatalf("broker 1 gets a-0 and b-0 in one marker: %+v", mk.Topics)
		}
	}
	st, _, _, parts, pending = e.snapshot("t1")
	if st != CompleteCommit || pending || parts != "[]" {
		t.Fatalf("after markers: %s %s pending=%v", st, parts, pending)
	}
	recs = e.log.records(t, e.c.PartitionFor("t1"))
	if last := recs[len(recs)-1].m; last.state != CompleteCommit || len(last.topicPartitions) != 0 {
		t.Fatalf("CompleteCommit record: %s", last)
	}
	if n := e.c.markers.numTxnsWithPendingMarkers(); n != 0 {
		t.Fatalf("pending markers %d", n)
	}

	expectCode(t, "retried commit after completion", e.end("t1", pid, epoch, true), nil)
	expectCode(t, "abort after commit", e.end("t1", pid, epoch, false), kerr.InvalidTxnState)
	expectCode(t, "old epoch", e.end("t1", pid, epoch-1, true), kerr.ProducerFenced)
	expectCode(t, "wrong pid", e.end("t1", pid+1, epoch, true), kerr.InvalidProducerIDMapping)
	expectCode(t, "unknown id", e.end("nope", pid, epoch, true), kerr.InvalidProducerIDMapping)
	expectCode(t, "add with old epoch", e.add("t1", pid, epoch-1, map[string][]int32{"a": {0}}), kerr.ProducerFenced)
	expectCode(t, "add unknown id", e.add("nope", pid, epoch, map[string][]int32{"a": {0}}), kerr.InvalidProducerIDMapping)

	// The next transaction starts from CompleteCommit.
	expectCode(t, "next add", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), nil)
	expectCode(t, "abort", e.end("t1", pid, epoch, false), nil)
	e.pump(e.c)
	if st, _, _, _, _ := e.snapshot("t1"); st != CompleteAbort {
		t.Fatalf("after abort: %s", st)
	}
	last := e.sender.requests()
	if mk := last[len(last)-1].req.Markers[0]; mk.Committed {
		t.Fatal("abort sent a COMMIT marker")
	}
	expectCode(t, "retried abort", e.end("t1", pid, epoch, false), nil)
	expectCode(t, "commit after abort", e.end("t1", pid, epoch, true), kerr.InvalidTxnState)

	// EndTxn with nothing started.
	pid2, epoch2 := e.init("t2")
	expectCode(t, "EndTxn in Empty", e.end("t2", pid2, epoch2, true), kerr.InvalidTxnState)
}

func TestMarkersBatchedPerBroker(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for _, id := range []string{"x1", "x2", "x3"} {
		pid, epoch := e.init(id)
		expectCode(t, "add", e.add(id, pid, epoch, map[string][]int32{"a": {0}}), nil)
		expectCode(t, "commit", e.end(id, pid, epoch, true), nil)
		ids = append(ids, id)
	}
	e.pump(e.c)
	sent := e.sender.requests()
	if len(sent) != 1 || len(sent[0].req.Markers) != 3 || sent[0].broker != 1 {
		t.Fatalf("three markers for broker 1 in one request, got %d requests", len(sent))
	}
	for _, id := range ids {
		if st, _, _, _, _ := e.snapshot(id); st != CompleteCommit {
			t.Fatalf("%s: %s", id, st)
		}
	}
}

func TestMarkerRetriesAndDrops(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"a": {0, 1}, "gone": {0}, "b": {0}}), nil)
	// a-0: NOT_LEADER once, then fine. a-1: its leader is unknown at first. b-0: the request
	// fails once at the network level. gone-0: not in the metadata (deleted): dropped.
	e.sender.setLeader(TopicPartition{"a", 1}, -1)
	notLeaderOnce := true
	e.sender.respond = func(broker int32, _ int64, tp TopicPartition) int16 {
		if tp == (TopicPartition{"a", 0}) && notLeaderOnce {
			notLeaderOnce = false
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	}
	e.sender.sendErr = errors.New("connection refused")
	expectCode(t, "commit", e.end("t1", pid, epoch, true), nil)
	e.pumpOnce(e.c) // the network fails
	if _, _, _, parts, _ := e.snapshot("t1"); parts != "[a-0,a-1,b-0]" {
		t.Fatalf("deleted partition not dropped or acks counted on failure: %s", parts)
	}
	e.sender.sendErr = nil
	e.pump(e.c)
	if st, _, _, parts, _ := e.snapshot("t1"); st != PrepareCommit || parts != "[a-1]" {
		t.Fatalf("only a-1 (no leader) should remain: %s %s", st, parts)
	}
	e.sender.setLeader(TopicPartition{"a", 1}, 2)
	e.pump(e.c)
	if st, _, _, parts, _ := e.snapshot("t1"); st != CompleteCommit || parts != "[]" {
		t.Fatalf("after the leader appears: %s %s", st, parts)
	}
}

func TestMarkerPermanentFailureStopsSending(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), nil)
	e.sender.respond = func(int32, int64, TopicPartition) int16 { return kerr.TransactionCoordinatorFenced.Code }
	expectCode(t, "commit", e.end("t1", pid, epoch, true), nil)
	e.pump(e.c)
	if n := len(e.sender.requests()); n != 1 {
		t.Fatalf("fenced markers must not be resent: %d requests", n)
	}
	if st, _, _, _, _ := e.snapshot("t1"); st != PrepareCommit {
		t.Fatalf("state %s", st)
	}
	if n := e.c.markers.numTxnsWithPendingMarkers(); n != 0 {
		t.Fatalf("pending %d", n)
	}
}

func TestFencingOngoingTransaction(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), nil)
	// A second producer with the same id: the ongoing transaction is aborted with a bumped
	// epoch and the caller is told to retry.
	_, _, code := e.c.HandleInitProducerID(bg, "t1", 60000, -1, -1)
	expectCode(t, "init over an ongoing txn", code, kerr.ConcurrentTransactions)
	st, _, ep, _, _ := e.snapshot("t1")
	if st != PrepareAbort || ep != epoch+1 {
		t.Fatalf("after fence: %s epoch %d", st, ep)
	}
	recs := e.log.records(t, e.c.PartitionFor("t1"))
	if last := recs[len(recs)-1].m; last.state != PrepareAbort || last.producerEpoch != epoch+1 {
		t.Fatalf("fence record %s", last)
	}
	// The zombie's calls are fenced.
	expectCode(t, "zombie commit", e.end("t1", pid, epoch, true), kerr.ProducerFenced)
	expectCode(t, "zombie add", e.add("t1", pid, epoch, map[string][]int32{"a": {1}}), kerr.ProducerFenced)
	_, _, code = e.c.HandleInitProducerID(bg, "t1", 60000, -1, -1)
	expectCode(t, "init while aborting", code, kerr.ConcurrentTransactions)

	e.pump(e.c)
	mk := e.sender.requests()[0].req.Markers[0]
	if mk.Committed || mk.ProducerEpoch != epoch+1 {
		t.Fatalf("fencing abort marker %+v", mk)
	}
	if st, _, _, _, _ := e.snapshot("t1"); st != CompleteAbort {
		t.Fatalf("after markers: %s", st)
	}
	_, ep2 := e.init("t1")
	if ep2 != epoch+2 {
		t.Fatalf("retried init gets epoch %d, want %d", ep2, epoch+2)
	}
}

func TestFenceFailureDoesNotBumpTwice(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), nil)
	e.log.mu.Lock()
	e.log.failWith = kerr.NotEnoughReplicas
	e.log.mu.Unlock()
	_, _, code := e.c.HandleInitProducerID(bg, "t1", 60000, -1, -1)
	expectCode(t, "fence append fails", code, kerr.CoordinatorNotAvailable)
	st, _, ep, _, pending := e.snapshot("t1")
	if st != Ongoing || ep != epoch+1 || pending {
		t.Fatalf("after a failed fence: %s epoch %d pending=%v", st, ep, pending)
	}
	e.log.mu.Lock()
	e.log.failWith = nil
	e.log.mu.Unlock()
	_, _, code = e.c.HandleInitProducerID(bg, "t1", 60000, -1, -1)
	expectCode(t, "fence again", code, kerr.ConcurrentTransactions)
	if _, _, ep, _, _ := e.snapshot("t1"); ep != epoch+1 {
		t.Fatalf("epoch bumped twice: %d", ep)
	}
}

func TestAppendErrorsResetPending(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable},
		{kerr.RequestTimedOut, kerr.CoordinatorNotAvailable},
		{context.DeadlineExceeded, kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator},
		{kerr.MessageTooLarge, kerr.UnknownServerError},
	} {
		e.log.mu.Lock()
		e.log.failWith = tc.err
		e.log.mu.Unlock()
		expectCode(t, tc.err.Error(), e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), tc.want)
		if _, _, _, _, pending := e.snapshot("t1"); pending {
			t.Fatal("pending state left after a failed append")
		}
	}
	e.log.mu.Lock()
	e.log.failWith = nil
	e.log.mu.Unlock()
	expectCode(t, "add after failures", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), nil)
}

func TestCompletionAppendRetried(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), nil)
	expectCode(t, "commit", e.end("t1", pid, epoch, true), nil)
	e.log.mu.Lock()
	e.log.failWith = kerr.NotEnoughReplicas
	e.log.mu.Unlock()
	e.pumpOnce(e.c) // markers acked, completion append fails → queued for retry
	if st, _, _, _, pending := e.snapshot("t1"); st != PrepareCommit || !pending {
		t.Fatalf("completion must stay pending: %s %v", st, pending)
	}
	e.log.mu.Lock()
	e.log.failWith = nil
	e.log.mu.Unlock()
	e.pump(e.c)
	if st, _, _, _, pending := e.snapshot("t1"); st != CompleteCommit || pending {
		t.Fatalf("after retry: %s %v", st, pending)
	}
}

func TestAbortTimedOutTransactions(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), nil)
	pid2, epoch2 := e.init("t2")
	e.clock.advance(30 * time.Second)
	expectCode(t, "add t2", e.add("t2", pid2, epoch2, map[string][]int32{"b": {0}}), nil)
	e.clock.advance(31 * time.Second) // t1 is 61 s old (timeout 60 s), t2 31 s
	e.c.abortTimedOutTransactions()
	e.settle(e.c)
	st, _, ep, _, _ := e.snapshot("t1")
	if st != PrepareAbort || ep != epoch+1 {
		t.Fatalf("timed out txn: %s epoch %d", st, ep)
	}
	if st, _, _, _, _ := e.snapshot("t2"); st != Ongoing {
		t.Fatalf("t2 is not timed out: %s", st)
	}
	e.pump(e.c)
	if st, _, _, _, _ := e.snapshot("t1"); st != CompleteAbort {
		t.Fatalf("after markers: %s", st)
	}
	// The timed-out producer is fenced.
	expectCode(t, "commit after timeout", e.end("t1", pid, epoch, true), kerr.ProducerFenced)
	expectCode(t, "add after timeout", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), kerr.ProducerFenced)
}

func TestExpireTransactionalIDs(t *testing.T) {
	e := newEnv(t)
	e.init("idle")
	pid, epoch := e.init("busy")
	e.clock.advance(7*24*time.Hour - time.Minute)
	expectCode(t, "add", e.add("busy", pid, epoch, map[string][]int32{"a": {0}}), nil)
	e.clock.advance(2 * time.Minute)
	e.c.state.removeExpiredTransactionalIds(bg)
	d := e.c.DescribeTransactions([]string{"idle", "busy"})
	if d[0].ErrCode != kerr.TransactionalIDNotFound.Code || d[1].ErrCode != 0 || d[1].State != "Ongoing" {
		t.Fatalf("describe after expiry: %+v", d)
	}
	recs := e.log.records(t, e.c.PartitionFor("idle"))
	if last := recs[len(recs)-1]; last.id != "idle" || last.m != nil {
		t.Fatalf("want a tombstone for idle, got %+v", last)
	}
	// An expired id starts over with a new producer id.
	pidIdle, ep := e.init("idle")
	if ep != 0 || pidIdle <= pid {
		t.Fatalf("re-created id: pid %d epoch %d", pidIdle, ep)
	}

	// A failed tombstone append keeps the id.
	e.clock.advance(8 * 24 * time.Hour)
	e.log.mu.Lock()
	e.log.failWith = kerr.NotEnoughReplicas
	e.log.mu.Unlock()
	e.c.state.removeExpiredTransactionalIds(bg)
	if d := e.c.DescribeTransactions([]string{"idle"}); d[0].ErrCode != 0 {
		t.Fatalf("id removed despite failed tombstone: %+v", d)
	}
	if _, _, _, _, pending := e.snapshot("idle"); pending {
		t.Fatal("Dead pending state left after a failed tombstone")
	}
}

func TestLoadWithMalformedRecords(t *testing.T) {
	e := newEnv(t)
	p := e.c.PartitionFor("t1")
	good := func(id string, state TransactionState, epoch int16, tps ...TopicPartition) kv {
		v, err := valueToBytes(TxnTransitMetadata{ProducerID: 500, ProducerEpoch: epoch, TxnTimeoutMs: 60000, TxnState: state,
			TopicPartitions: tps, TxnStartTimestamp: 1, TxnLastUpdateTimestamp: 2})
		if err != nil {
			t.Fatal(err)
		}
		return kv{keyToBytes(id), v}
	}
	var sameP []string
	for _, id := range []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t11", "t12"} {
		if e.c.PartitionFor(id) == p {
			sameP = append(sameP, id)
		}
	}
	if len(sameP) < 3 {
		t.Fatalf("need three ids on one partition, have %v", sameP)
	}
	a, b, c := sameP[0], sameP[1], sameP[2]
	e.log.appendRecords(t, p,
		good(a, Ongoing, 3, TopicPartition{"a", 0}),
		kv{nil, []byte{0, 0}},                       // null key
		kv{[]byte{0, 9, 0, 1, 'x'}, []byte{1, 2}},   // unknown key version
		kv{keyToBytes(a), []byte{0, 0, 1}},          // truncated value: skipped, a keeps Ongoing
		kv{keyToBytes(b), []byte{0, 7, 0, 0, 0, 0}}, // unknown value version
		good(b, Empty, 1),
		good(c, CompleteCommit, 4),
	)
	e.log.appendRecords(t, p, kv{keyToBytes(c), nil}) // tombstone removes c
	e.c.OnResignation(p, nil)
	e.elect(e.c, p, 2)
	if st, _, ep, parts, _ := e.snapshot(a); st != Ongoing || ep != 3 || parts != "[a-0]" {
		t.Fatalf("%s loaded as %s epoch %d %s", a, st, ep, parts)
	}
	if st, _, _, _, _ := e.snapshot(b); st != Empty {
		t.Fatalf("%s loaded as %s", b, st)
	}
	if d := e.c.DescribeTransactions([]string{c}); d[0].ErrCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("tombstoned id loaded: %+v", d)
	}
	// The loaded coordinator epoch is used for new appends.
	expectCode(t, "end loaded txn", e.end(a, 500, 3, false), nil)
	e.pump(e.c)
	if mk := e.sender.requests()[0].req.Markers[0]; mk.CoordinatorEpoch != 2 {
		t.Fatalf("coordinator epoch %d", mk.CoordinatorEpoch)
	}
}

func TestLoadInProgressAndNotCoordinator(t *testing.T) {
	e := newEnv(t)
	p := e.c.PartitionFor("t1")
	e.c.OnResignation(p, nil)
	_, _, code := e.c.HandleInitProducerID(bg, "t1", 60000, -1, -1)
	expectCode(t, "not owned", code, kerr.NotCoordinator)
	d := e.c.DescribeTransactions([]string{"t1"})
	if d[0].ErrCode != kerr.NotCoordinator.Code {
		t.Fatalf("describe: %+v", d)
	}

	gate := make(chan struct{})
	e.log.mu.Lock()
	e.log.readGate = gate
	e.log.leaders[p] = 3
	e.log.mu.Unlock()
	e.log.appendRecords(t, p, kv{keyToBytes("zz"), nil})
	e.c.OnElection(p, 3)
	_, _, code = e.c.HandleInitProducerID(bg, "t1", 60000, -1, -1)
	expectCode(t, "loading", code, kerr.CoordinatorLoadInProgress)
	expectCode(t, "add while loading", e.add("t1", 1, 0, map[string][]int32{"a": {0}}), kerr.CoordinatorLoadInProgress)
	if _, c, _ := e.c.ListTransactions(nil, nil); c != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("list while loading: %d", c)
	}
	close(gate)
	e.settle(e.c)
	e.init("t1")

	// A repeated election at the loaded epoch keeps the cache (and transitions in flight).
	before := e.metadata("t1")
	e.c.OnElection(p, 3)
	e.settle(e.c)
	if e.metadata("t1") != before {
		t.Fatal("repeated election reloaded the partition")
	}
	// Resigning with an epoch unloads the partition whatever epoch is cached, as Kafka's
	// removeTransactionsForTxnTopicPartition(partition, epoch) does.
	old := int32(2)
	e.c.OnResignation(p, &old)
	if _, loaded := e.c.state.ownsPartition(p); loaded {
		t.Fatal("still loaded after resignation")
	}
}

func TestFailoverResumesMarkers(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"a": {0, 1}}), nil)
	e.sender.sendErr = errors.New("network down")
	expectCode(t, "commit", e.end("t1", pid, epoch, true), nil)
	e.pumpOnce(e.c)
	p := e.c.PartitionFor("t1")

	// Leadership moves to another broker (a second coordinator over the same log).
	e.c.OnResignation(p, nil)
	e.sender.mu.Lock()
	e.sender.sendErr = nil
	e.sender.sent = nil
	e.sender.mu.Unlock()
	c2 := e.newCoordinator()
	e.elect(c2, p, 5)
	e.pump(c2)
	sent := e.sender.requests()
	if len(sent) == 0 {
		t.Fatal("no markers resent after failover")
	}
	for _, s := range sent {
		mk := s.req.Markers[0]
		if !mk.Committed || mk.CoordinatorEpoch != 5 || mk.ProducerEpoch != epoch {
			t.Fatalf("resumed marker %+v", mk)
		}
	}
	cur, ke := c2.state.getTransactionState("t1")
	if ke != nil || cur == nil {
		t.Fatal(ke)
	}
	cur.txn.mu.Lock()
	st := cur.txn.state
	cur.txn.mu.Unlock()
	if st != CompleteCommit {
		t.Fatalf("after failover: %s", st)
	}
	recs := e.log.records(t, p)
	if last := recs[len(recs)-1].m; last.state != CompleteCommit {
		t.Fatalf("last record %s", last)
	}
	// The old coordinator's late completion cannot write anything.
	if _, _, c := e.c.HandleInitProducerID(bg, "t1", 60000, -1, -1); c != kerr.NotCoordinator.Code {
		t.Fatalf("old coordinator answered %v", kerr.ErrorForCode(c))
	}
}

func TestStaleCoordinatorEpochCannotAppend(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	p := e.c.PartitionFor("t1")
	// The log's leadership moved on (epoch 9) before the coordinator heard of it.
	e.log.mu.Lock()
	e.log.leaders[p] = 9
	e.log.mu.Unlock()
	n := len(e.log.records(t, p))
	expectCode(t, "append at a stale epoch", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), kerr.NotCoordinator)
	if len(e.log.records(t, p)) != n {
		t.Fatal("stale coordinator appended")
	}
}

func TestDescribeAndList(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	e.clock.advance(time.Second)
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"b": {0}, "a": {1, 0}}), nil)
	pid2, _ := e.init("t2")
	d := e.c.DescribeTransactions([]string{"t1", "t2", "nope", ""})
	if d[0].ErrCode != 0 || d[0].State != "Ongoing" || d[0].ProducerID != pid || d[0].TimeoutMs != 60000 ||
		d[0].StartTimestamp != e.clock.Now().UnixMilli() || len(d[0].Partitions["a"]) != 2 || d[0].Partitions["a"][0] != 0 {
		t.Fatalf("t1: %+v", d[0])
	}
	if d[1].State != "Empty" || d[1].StartTimestamp != -1 || len(d[1].Partitions) != 0 {
		t.Fatalf("t2: %+v", d[1])
	}
	if d[2].ErrCode != kerr.TransactionalIDNotFound.Code || d[3].ErrCode != kerr.InvalidRequest.Code {
		t.Fatalf("errors: %+v %+v", d[2], d[3])
	}
	all, code, unknown := e.c.ListTransactions(nil, nil)
	if code != 0 || len(all) != 2 || len(unknown) != 0 {
		t.Fatalf("list: %+v %d %v", all, code, unknown)
	}
	got, _, unknown := e.c.ListTransactions([]string{"Ongoing", "Bogus"}, nil)
	if len(got) != 1 || got[0].TransactionalID != "t1" || len(unknown) != 1 || unknown[0] != "Bogus" {
		t.Fatalf("state filter: %+v %v", got, unknown)
	}
	got, _, _ = e.c.ListTransactions(nil, []int64{pid2})
	if len(got) != 1 || got[0].TransactionalID != "t2" || got[0].State != "Empty" {
		t.Fatalf("pid filter: %+v", got)
	}
	e.c.active.Store(false)
	if _, code, _ := e.c.ListTransactions(nil, nil); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("inactive: %d", code)
	}
	if d := e.c.DescribeTransactions([]string{"t1"}); d[0].ErrCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("inactive describe: %+v", d)
	}
}

// TestStartShutdown runs the real loops: a commit completes through the send loop, and
// Shutdown stops every goroutine.
func TestStartShutdown(t *testing.T) {
	e := newEnv(t)
	e.c.markers.retryBackoff = 10 * time.Millisecond
	e.c.Start()
	pid, epoch := e.init("t1")
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"a": {0}}), nil)
	e.sender.setLeader(TopicPartition{"a", 0}, -1) // no leader at first: the loop's timer retries
	expectCode(t, "commit", e.end("t1", pid, epoch, true), nil)
	time.Sleep(30 * time.Millisecond)
	e.sender.setLeader(TopicPartition{"a", 0}, 1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if st, _, _, _, _ := e.snapshot("t1"); st == CompleteCommit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("commit did not complete through the send loop")
		}
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan struct{})
	go func() { e.c.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown hangs")
	}
	if _, _, code := e.c.HandleInitProducerID(bg, "t1", 60000, -1, -1); code != kerr.NotCoordinator.Code {
		t.Fatalf("after shutdown: %v", kerr.ErrorForCode(code))
	}
}

// TestAllPartitionsDeleted: a transaction whose partitions are all gone completes without
// sending anything.
func TestAllPartitionsDeleted(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("t1")
	expectCode(t, "add", e.add("t1", pid, epoch, map[string][]int32{"gone": {0, 1}}), nil)
	expectCode(t, "abort", e.end("t1", pid, epoch, false), nil)
	e.pump(e.c)
	if n := len(e.sender.requests()); n != 0 {
		t.Fatalf("%d requests for deleted partitions", n)
	}
	if st, _, _, _, pending := e.snapshot("t1"); st != CompleteAbort || pending {
		t.Fatalf("state %s pending=%v", st, pending)
	}
}

// TestRotationPIDFailure: the producer id manager failing during an epoch-exhaustion
// rotation answers its error and leaves no pending state.
func TestRotationPIDFailure(t *testing.T) {
	e := newEnv(t)
	e.init("t1")
	m := e.metadata("t1")
	m.mu.Lock()
	m.producerEpoch = math.MaxInt16 - 1
	m.mu.Unlock()
	e.pids.mu.Lock()
	e.pids.err = kerr.CoordinatorLoadInProgress // any Kafka error passes through
	e.pids.mu.Unlock()
	_, _, code := e.c.HandleInitProducerID(bg, "t1", 60000, -1, -1)
	expectCode(t, "rotation with failing pid manager", code, kerr.CoordinatorLoadInProgress)
	if _, _, _, _, pending := e.snapshot("t1"); pending {
		t.Fatal("pending state left")
	}
}
