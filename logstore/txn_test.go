package logstore

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// txnBatch builds a producer batch of records with the given keys (values "v<key>"),
// transactional if txn.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, keys []string, ts int64, txn bool) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, len(keys))
	for i, k := range keys {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Key: []byte(k), Value: []byte("v" + k)}
	}
	h := recordbatch.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: int32(len(keys) - 1), BaseTimestamp: ts, MaxTimestamp: ts,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
	if txn {
		h.Attributes = recordbatch.AttrTransactional
	}
	b, err := recordbatch.Build(h, recs, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keysN(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func mustAppend(t testing.TB, l *Log, b []byte) AppendInfo {
	t.Helper()
	info, err := l.AppendAsLeader(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func mustMarker(t testing.TB, l *Log, pid int64, epoch int16, commit bool, coordEpoch int32) AppendInfo {
	t.Helper()
	info, err := l.AppendTxnMarker(pid, epoch, commit, coordEpoch, 0)
	if err != nil {
		t.Fatalf("marker pid %d epoch %d commit %t: %v", pid, epoch, commit, err)
	}
	return info
}

func wantLSO(t testing.TB, l *Log, want int64) {
	t.Helper()
	if got := l.LastStableOffset(); got != want {
		fuo, ok := l.FirstUnstableOffset()
		t.Fatalf("LSO %d, want %d (HW %d, first unstable %d/%t)", got, want, l.HighWatermark(), fuo, ok)
	}
}

// LSO and the aborted-transaction index through a sequence of two producers' transactions
// (Kafka's ProducerStateManagerTest/UnifiedLogTest LSO cases).
func TestTxnLastStableOffsetAndAbortedIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	if _, ok := l.FirstUnstableOffset(); ok {
		t.Fatal("first unstable offset on an empty log")
	}
	mustAppend(t, l, makeBatch(t, 2, 10, ts, recordbatch.None, false)) // 0-1
	l.UpdateHighWatermark(l.LogEndOffset())
	wantLSO(t, l, 2)

	mustAppend(t, l, txnBatch(t, 1, 0, 0, keysN("a", 3), ts, true)) // 2-4: P1 opens
	if fuo, ok := l.FirstUnstableOffset(); !ok || fuo != 2 {
		t.Fatalf("first unstable %d/%t, want 2", fuo, ok)
	}
	wantLSO(t, l, 2) // HW 2 still
	l.UpdateHighWatermark(l.LogEndOffset())
	wantLSO(t, l, 2)
	if !l.HasOngoingTransaction(1) || l.HasOngoingTransaction(2) {
		t.Fatal("ongoing transactions wrong")
	}
	mustAppend(t, l, txnBatch(t, 2, 0, 0, keysN("b", 2), ts, true)) // 5-6: P2 opens
	mustAppend(t, l, txnBatch(t, 1, 0, 3, keysN("c", 1), ts, true)) // 7: P1 again
	if _, err := os.Stat(TxnIndexFileName(dir, 0)); !os.IsNotExist(err) {
		t.Fatalf(".txnindex exists before any abort (created lazily): %v", err)
	}
	abort := mustMarker(t, l, 1, 0, false, 5) // 8: P1 aborts
	if abort.FirstOffset != 8 || abort.LastOffset != 8 {
		t.Fatalf("marker at %+v", abort)
	}
	// The marker is above the HW: the transaction stays unstable until the HW passes it.
	wantLSO(t, l, 2)
	if got := l.OngoingTransactions(); !reflect.DeepEqual(got, [][2]int64{{2, 5}}) {
		t.Fatalf("ongoing %v", got)
	}
	l.UpdateHighWatermark(8)
	wantLSO(t, l, 2)
	l.UpdateHighWatermark(9)
	wantLSO(t, l, 5) // P2's transaction holds it now
	want := []AbortedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 8, LastStableOffset: 5}}
	if got := l.CollectAbortedTransactions(0, 100); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	for _, r := range [][2]int64{{9, 100}, {0, 2}} {
		if got := l.CollectAbortedTransactions(r[0], r[1]); len(got) != 0 {
			t.Fatalf("aborted in [%d, %d): %+v", r[0], r[1], got)
		}
	}
	if got := l.CollectAbortedTransactions(8, 9); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted in [8, 9): %+v", got)
	}

	mustMarker(t, l, 2, 0, true, 5) // 9: P2 commits
	l.UpdateHighWatermark(l.LogEndOffset())
	wantLSO(t, l, 10)
	if _, ok := l.FirstUnstableOffset(); ok {
		t.Fatal("first unstable offset after every transaction completed")
	}
	// A commit writes no index entry; the file holds exactly one 34-byte entry.
	data, err := os.ReadFile(TxnIndexFileName(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	golden := "0000" + "0000000000000001" + "0000000000000002" + "0000000000000008" + "0000000000000005"
	if hex.EncodeToString(data) != golden {
		t.Fatalf(".txnindex bytes %x, want %s", data, golden)
	}
	var out bytes.Buffer
	if err := DumpLog(&out, []string{TxnIndexFileName(dir, 0)}, DumpOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "version: 0 producerId: 1 firstOffset: 2 lastOffset: 8 lastStableOffset: 5") {
		t.Fatalf("dump-log:\n%s", out.String())
	}
	out.Reset()
	if err := DumpLog(&out, []string{LogFileName(dir, 0)}, DumpOptions{DeepIteration: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "endTxnMarker: ABORT coordinatorEpoch: 5") || !strings.Contains(out.String(), "endTxnMarker: COMMIT coordinatorEpoch: 5") {
		t.Fatalf("dump-log of markers:\n%s", out.String())
	}
	for _, p := range l.ActiveProducers() {
		if p.CurrentTxnFirstOffset != -1 || p.CoordinatorEpoch != 5 {
			t.Fatalf("producer after its marker: %+v", p)
		}
	}
}

func TestTxnMarkerFencingAndBadInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	mustAppend(t, l, txnBatch(t, 1, 3, 0, keysN("a", 2), ts, true))
	if _, err := l.AppendTxnMarker(1, 2, true, 0, 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker with an older producer epoch: %v", err)
	}
	mustMarker(t, l, 1, 3, true, 7)
	mustAppend(t, l, txnBatch(t, 1, 3, 2, keysN("b", 1), ts, true))
	if _, err := l.AppendTxnMarker(1, 3, false, 6, 0); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("marker from an older coordinator epoch: %v", err)
	}
	if !l.HasOngoingTransaction(1) {
		t.Fatal("a fenced marker closed the transaction")
	}
	// A non-transactional batch while the transaction is open.
	if _, err := l.AppendAsLeader(txnBatch(t, 1, 3, 3, keysN("c", 1), ts, false), 0); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional batch inside a transaction: %v", err)
	}
	// The coordinator aborts with a bumped epoch (a timed-out transaction): the producer is
	// fenced afterwards.
	mustMarker(t, l, 1, 4, false, 8)
	if _, err := l.AppendAsLeader(txnBatch(t, 1, 3, 3, keysN("d", 1), ts, true), 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("zombie after an epoch bump: %v", err)
	}
	// Control batches from clients (or through AppendAsLeaderOpts at all) are refused.
	ctl := endTxnMarkerBatch(1, 4, true, 9, ts)
	for _, origin := range []AppendOrigin{OriginClient, OriginCoordinator} {
		if _, err := l.AppendAsLeaderOpts(append([]byte(nil), ctl...), 0, AppendOptions{Origin: origin}); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("control batch from %s: %v", origin, err)
		}
	}
	// A marker for a producer without a transaction is written and closes nothing.
	leo := l.LogEndOffset()
	mustMarker(t, l, 42, 0, true, 9)
	if l.LogEndOffset() != leo+1 || len(l.CollectAbortedTransactions(0, 100)) != 1 {
		t.Fatalf("marker without a transaction: LEO %d, aborted %v", l.LogEndOffset(), l.CollectAbortedTransactions(0, 100))
	}
	// Followers take markers as they come, even from an old coordinator epoch (Kafka logs).
	f := openTestLog(t, filepath.Join(t.TempDir(), "txn-0"), testLogOpts{clock: clock})
	defer f.Close()
	ri, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := ri.Bytes()
	if _, err := f.AppendAsFollower(data); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.CollectAbortedTransactions(0, 100), l.CollectAbortedTransactions(0, 100)) ||
		!reflect.DeepEqual(f.ActiveProducers(), l.ActiveProducers()) {
		t.Fatalf("follower state differs: %+v / %+v", f.ActiveProducers(), l.ActiveProducers())
	}
}

func TestTxnVerificationGuard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	req := func(g *VerificationGuard) AppendOptions {
		return AppendOptions{Origin: OriginClient, Guard: g, RequireVerification: true}
	}
	if _, err := l.AppendAsLeaderOpts(txnBatch(t, 1, 0, 0, keysN("a", 1), ts, true), 0, req(nil)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("unverified first transactional batch: %v", err)
	}
	g := l.MaybeStartTransactionVerification(1, 0, 0)
	if g == nil || l.MaybeStartTransactionVerification(1, 0, 0) != g {
		t.Fatal("no guard, or a different one for the same producer")
	}
	if other := l.MaybeStartTransactionVerification(2, 0, 0); other == nil || other == g {
		t.Fatal("producers share a guard")
	}
	if _, err := l.AppendAsLeaderOpts(txnBatch(t, 1, 0, 0, keysN("a", 1), ts, true), 0, req(l.MaybeStartTransactionVerification(2, 0, 0))); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("another producer's guard: %v", err)
	}
	if _, err := l.AppendAsLeaderOpts(txnBatch(t, 1, 0, 0, keysN("a", 1), ts, true), 0, req(g)); err != nil {
		t.Fatal(err)
	}
	// Open now: no verification needed, the next batch goes without a guard.
	if l.MaybeStartTransactionVerification(1, 0, 0) != nil {
		t.Fatal("guard for a producer with an open transaction")
	}
	if _, err := l.AppendAsLeaderOpts(txnBatch(t, 1, 0, 1, keysN("b", 1), ts, true), 0, req(nil)); err != nil {
		t.Fatal(err)
	}
	mustMarker(t, l, 1, 0, true, 0)
	// The spent guard cannot open the next transaction.
	if _, err := l.AppendAsLeaderOpts(txnBatch(t, 1, 0, 2, keysN("c", 1), ts, true), 0, req(g)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("stale guard: %v", err)
	}
	// A marker between verification and append spends the new guard too (the ABA case).
	g2 := l.MaybeStartTransactionVerification(1, 2, 0)
	if g2 == nil || g2 == g {
		t.Fatal("no fresh guard")
	}
	mustMarker(t, l, 1, 0, false, 0)
	if _, err := l.AppendAsLeaderOpts(txnBatch(t, 1, 0, 2, keysN("c", 1), ts, true), 0, req(g2)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("guard spent by a marker: %v", err)
	}
	g3 := l.MaybeStartTransactionVerification(1, 2, 0)
	if _, err := l.AppendAsLeaderOpts(txnBatch(t, 1, 0, 2, keysN("c", 1), ts, true), 0, req(g3)); err != nil {
		t.Fatal(err)
	}
	// Verification off: transactional batches open transactions unverified.
	if _, err := l.AppendAsLeaderOpts(txnBatch(t, 3, 0, 0, keysN("d", 1), ts, true), 0, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	// The coordinator's own transactional batches carry sequence 0 every time.
	for i := 0; i < 2; i++ {
		if _, err := l.AppendAsLeaderOpts(txnBatch(t, 4, 0, 0, keysN("o", 1), ts, true), 0, AppendOptions{Origin: OriginCoordinator}); err != nil {
			t.Fatalf("coordinator batch %d: %v", i, err)
		}
	}
	// Verification state expires with producer.id.expiration.ms.
	g5 := l.MaybeStartTransactionVerification(5, 0, 0)
	clock.Add(25 * time.Hour)
	l.RemoveExpiredProducers()
	if g6 := l.MaybeStartTransactionVerification(5, 0, 0); g6 == g5 {
		t.Fatal("verification state did not expire")
	}
}

// The verification state keeps the lowest base sequence it was started with at the
// producer's newest epoch (VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch); a
// client batch above it fails with OUT_OF_ORDER_SEQUENCE until the producer's first
// transactional append spends the state (ProducerAppendInfo.checkSequence), guard or not.
func TestTxnVerificationLowestSequence(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	req := func(g *VerificationGuard) AppendOptions {
		return AppendOptions{Origin: OriginClient, Guard: g, RequireVerification: true}
	}
	appendSeq := func(pid int64, epoch int16, seq int32, g *VerificationGuard) error {
		t.Helper()
		_, err := l.AppendAsLeaderOpts(txnBatch(t, pid, epoch, seq, keysN("k", 1), ts, true), 0, req(g))
		return err
	}

	// Batch 0 started a verification that failed retriably; batch 5 of the same epoch,
	// verified meanwhile, must not open the transaction ahead of it.
	g := l.MaybeStartTransactionVerification(1, 0, 0)
	if l.MaybeStartTransactionVerification(1, 5, 0) != g {
		t.Fatal("a second verification of the producer got another guard")
	}
	if err := appendSeq(1, 0, 5, g); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence above the lowest verified one: %v", err)
	}
	if err := appendSeq(1, 0, 0, g); err != nil {
		t.Fatal(err)
	}
	// The first transactional append spent the state: sequences follow the usual rules.
	if err := appendSeq(1, 0, 1, nil); err != nil {
		t.Fatal(err)
	}

	// A lower sequence at the same epoch lowers the bound; a higher one does not raise it.
	g = l.MaybeStartTransactionVerification(2, 4, 0)
	l.MaybeStartTransactionVerification(2, 2, 0)
	l.MaybeStartTransactionVerification(2, 3, 0)
	if err := appendSeq(2, 0, 3, g); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 3 above the lowest (2): %v", err)
	}
	if err := appendSeq(2, 0, 2, g); err != nil {
		t.Fatal(err)
	}

	// A bumped epoch resets the bound to its sequence; an older epoch leaves it.
	g = l.MaybeStartTransactionVerification(3, 0, 0)
	l.MaybeStartTransactionVerification(3, 7, 1)
	l.MaybeStartTransactionVerification(3, 1, 0)
	if err := appendSeq(3, 1, 8, g); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 8 above the new epoch's lowest (7): %v", err)
	}
	if err := appendSeq(3, 1, 7, g); err != nil {
		t.Fatalf("the new epoch's lowest sequence: %v", err)
	}

	// Coordinators' batches are not sequence-checked: the group coordinator verifies with
	// NO_SEQUENCE and appends with base sequence 0.
	g = l.MaybeStartTransactionVerification(4, -1, 0)
	if _, err := l.AppendAsLeaderOpts(txnBatch(t, 4, 0, 0, keysN("o", 1), ts, true), 0,
		AppendOptions{Origin: OriginCoordinator, Guard: g, RequireVerification: true}); err != nil {
		t.Fatalf("coordinator batch: %v", err)
	}
}

// A producer with an open transaction is never expired (ProducerStateManager.isProducerExpired).
func TestTxnProducerExpirySkipsOpenTransaction(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	mustAppend(t, l, txnBatch(t, 1, 0, 0, keysN("a", 1), ts, true))
	mustAppend(t, l, txnBatch(t, 2, 0, 0, keysN("b", 1), ts, false))
	clock.Add(25 * time.Hour)
	if n := l.RemoveExpiredProducers(); n != 1 {
		t.Fatalf("expired %d producers, want 1", n)
	}
	if _, ok := producerState(t, l, 1); !ok || !l.HasOngoingTransaction(1) {
		t.Fatal("the producer with an open transaction expired")
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	wantLSO(t, l, 0)
}

// txnScenario writes, over several small segments, transactions of three producers: some
// aborted, some committed, one left open. It returns the aborted list and the open
// transaction's first offset.
func txnScenario(t testing.TB, l *Log, ts int64) ([]AbortedTxn, int64) {
	t.Helper()
	seq := map[int64]int32{}
	data := func(pid int64, keys []string) AppendInfo {
		info := mustAppend(t, l, txnBatch(t, pid, 0, seq[pid], keys, ts, true))
		seq[pid] += int32(len(keys))
		return info
	}
	for round := 0; round < 6; round++ {
		for pid := int64(1); pid <= 3; pid++ {
			data(pid, keysN(fmt.Sprintf("p%dr%d-", pid, round), 3))
		}
		mustAppend(t, l, makeBatch(t, 2, 30, ts, recordbatch.None, true))
		for pid := int64(1); pid <= 3; pid++ {
			data(pid, keysN(fmt.Sprintf("q%dr%d-", pid, round), 2))
			mustMarker(t, l, pid, 0, (int64(round)+pid)%2 == 0, 1)
		}
	}
	open := data(2, keysN("open", 2))
	mustAppend(t, l, makeBatch(t, 3, 30, ts, recordbatch.None, true))
	aborted := l.CollectAbortedTransactions(0, l.LogEndOffset())
	if len(aborted) != 9 {
		t.Fatalf("%d aborted transactions, want 9", len(aborted))
	}
	return aborted, open.FirstOffset
}

var txnRecoveryCfg = map[string]string{"segment.bytes": "2000", "segment.index.bytes": "4096", "index.interval.bytes": "200"}

// .txnindex after a crash: missing index files and an unflushed tail are rebuilt from the
// log by recovery, and open transactions come back from snapshots and replay.
func TestTxnIndexRecovery(t *testing.T) {
	src := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, src, testLogOpts{clock: clock, cfg: txnRecoveryCfg})
	aborted, openFirst := txnScenario(t, l, clock.Now().UnixMilli())
	segs := l.Segments()
	if len(segs) < 4 {
		t.Fatalf("want several segments, got %d", len(segs))
	}
	var withIndex int
	for _, s := range segs {
		if _, err := os.Stat(TxnIndexFileName(src, s.BaseOffset)); err == nil {
			withIndex++
		}
	}
	if withIndex < 2 {
		t.Fatalf("%d of %d segments have a .txnindex: want several", withIndex, len(segs))
	}
	check := func(name string, l2 *Log, wantAborted []AbortedTxn, wantOpen int64) {
		t.Helper()
		if got := l2.CollectAbortedTransactions(0, l2.LogEndOffset()); !reflect.DeepEqual(got, wantAborted) {
			t.Fatalf("%s: aborted\n%+v\nwant\n%+v", name, got, wantAborted)
		}
		l2.UpdateHighWatermark(l2.LogEndOffset())
		if fuo, ok := l2.FirstUnstableOffset(); !ok || fuo != wantOpen {
			t.Fatalf("%s: first unstable %d/%t, want %d", name, fuo, ok, wantOpen)
		}
		wantLSO(t, l2, wantOpen)
	}

	t.Run("index files removed", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "txn-0")
		copyDir(t, src, dst)
		for _, s := range segs {
			_ = os.Remove(TxnIndexFileName(dst, s.BaseOffset))
		}
		l2 := openTestLog(t, dst, testLogOpts{clock: clock, cfg: txnRecoveryCfg, rp: 0})
		defer l2.Close()
		check("removed", l2, aborted, openFirst)
	})
	t.Run("corrupt index entry", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "txn-0")
		copyDir(t, src, dst)
		// An entry whose marker lies below the segment: CorruptIndexException, rebuilt
		// even after a clean shutdown.
		var victim int64 = -1
		for _, s := range segs[1:] {
			if _, err := os.Stat(TxnIndexFileName(dst, s.BaseOffset)); err == nil {
				victim = s.BaseOffset
				break
			}
		}
		var e [abortedTxnSize]byte
		AbortedTxn{ProducerID: 9, FirstOffset: 0, LastOffset: 0, LastStableOffset: 1}.encode(e[:])
		if err := os.WriteFile(TxnIndexFileName(dst, victim), e[:], 0o644); err != nil {
			t.Fatal(err)
		}
		l2 := openTestLog(t, dst, testLogOpts{clock: clock, cfg: txnRecoveryCfg, clean: true})
		defer l2.Close()
		check("corrupt", l2, aborted, openFirst)
	})
	t.Run("unflushed tail with an abort marker", func(t *testing.T) {
		// Cut the active segment right before the last abort marker in it, if any: that
		// transaction is open again after recovery and its entry is gone.
		active := segs[len(segs)-1].BaseOffset
		var cutAt int64 = -1
		var keep []AbortedTxn
		for _, a := range aborted {
			if a.LastOffset >= active && cutAt < 0 {
				cutAt = a.LastOffset
			}
		}
		if cutAt < 0 {
			t.Fatal("bad test setup: no abort marker in the active segment")
		}
		for _, a := range aborted {
			if a.LastOffset < cutAt {
				keep = append(keep, a)
			}
		}
		ri, err := l.Read(cutAt, 1, l.LogEndOffset(), true)
		if err != nil || len(ri.Regions) == 0 {
			t.Fatalf("read marker: %v", err)
		}
		dst := filepath.Join(t.TempDir(), "txn-0")
		crashCopy(t, src, dst, active, ri.Regions[0].Pos)
		l2 := openTestLog(t, dst, testLogOpts{clock: clock, cfg: txnRecoveryCfg, rp: active})
		defer l2.Close()
		var reopened int64 = -1
		for _, a := range aborted {
			if a.LastOffset == cutAt {
				reopened = a.FirstOffset
			}
		}
		check("cut", l2, keep, min(reopened, openFirst))
	})
	t.Run("clean shutdown keeps open transactions in the snapshot", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "txn-0")
		copyDir(t, src, dst)
		l1 := openTestLog(t, dst, testLogOpts{clock: clock, cfg: txnRecoveryCfg, rp: 0})
		if err := l1.Close(); err != nil {
			t.Fatal(err)
		}
		l2 := openTestLog(t, dst, testLogOpts{clock: clock, cfg: txnRecoveryCfg, clean: true})
		defer l2.Close()
		if n := l2.ProducerStateReplayedBatches(); n != 0 {
			t.Fatalf("clean reopen replayed %d batches", n)
		}
		check("clean", l2, aborted, openFirst)
		if !l2.HasOngoingTransaction(2) {
			t.Fatal("open transaction lost across a clean restart")
		}
	})
	l.Close()
}

func TestTxnTruncation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: txnRecoveryCfg})
	defer l.Close()
	aborted, openFirst := txnScenario(t, l, clock.Now().UnixMilli())
	l.UpdateHighWatermark(l.LogEndOffset())
	wantLSO(t, l, openFirst)
	// Truncate to just after the open transaction's first batch is gone: no open
	// transaction is left at that point except those whose markers are cut.
	mid := aborted[len(aborted)/2]
	if err := l.TruncateTo(mid.LastOffset); err != nil {
		t.Fatal(err)
	}
	got := l.CollectAbortedTransactions(0, l.LogEndOffset())
	if !reflect.DeepEqual(got, aborted[:len(aborted)/2]) {
		t.Fatalf("after truncation to %d: aborted %+v", mid.LastOffset, got)
	}
	// mid's transaction is open again (its marker went), so the LSO stops at its start.
	if fuo, ok := l.FirstUnstableOffset(); !ok || fuo > mid.FirstOffset {
		t.Fatalf("first unstable %d/%t, want <= %d", fuo, ok, mid.FirstOffset)
	}
	if !l.HasOngoingTransaction(mid.ProducerID) {
		t.Fatal("transaction whose marker was truncated is not open")
	}
	// Segments past the truncation point took their .txnindex files with them.
	for _, name := range listDir(t, dir) {
		if strings.HasSuffix(name, TxnIndexFileSuffix) {
			if base, _ := OffsetFromFileName(name); base > mid.LastOffset {
				t.Fatalf("%s left after truncation to %d", name, mid.LastOffset)
			}
		}
	}
	// The follower catches up again and sees the same transactions.
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.FirstUnstableOffset(); ok || len(l.CollectAbortedTransactions(0, 1000)) != 0 {
		t.Fatal("transactions survived a full truncation")
	}
}

func listDir(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// Retention and DeleteRecords moving the log start past a completed transaction's marker
// stop it from holding the LSO back; an open one is clamped to the log start.
func TestTxnLogStartOffsetBoundsFirstUnstable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	mustAppend(t, l, txnBatch(t, 1, 0, 0, keysN("a", 2), ts, true)) // 0-1
	mustAppend(t, l, makeBatch(t, 3, 10, ts, recordbatch.None, false))
	l.UpdateHighWatermark(l.LogEndOffset())
	if err := l.MaybeIncrementLogStartOffset(3); err != nil {
		t.Fatal(err)
	}
	wantLSO(t, l, 3)
}

// batchesSummary lists the log as "k:<key>" for data records and "ABORT/COMMIT(pid)" for
// markers ("empty(pid)" for an emptied batch).
func batchesSummary(t testing.TB, l *Log) []string {
	t.Helper()
	var out []string
	for _, b := range readAllBatches(t, l, l.LogStartOffset()) {
		if b.RecordCount() == 0 {
			out = append(out, fmt.Sprintf("empty(%d)", b.ProducerID()))
			continue
		}
		if b.Control() {
			m, _, _ := parseEndTxnMarker(b)
			name := "ABORT"
			if m.commit {
				name = "COMMIT"
			}
			out = append(out, fmt.Sprintf("%s(%d)", name, b.ProducerID()))
			continue
		}
		_ = b.ForEachRecord(false, func(r *recordbatch.Record) error {
			out = append(out, "k:"+string(r.Key))
			return nil
		})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The cleaner removes aborted transactional data at once, keeps the ABORT marker (and
// its .txnindex entry) while that pass saw data of the transaction, then gives the marker
// a delete horizon and removes it after delete.retention.ms (LogCleanerTest's
// testAbortMarkerRemoval / testCommitMarkerRemoval shape).
func TestCleanerTransactions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	cfg := map[string]string{"cleanup.policy": "compact", "segment.bytes": "600", "delete.retention.ms": "1000"}
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: cfg})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	mustAppend(t, l, txnBatch(t, 1, 0, 0, []string{"a0", "a1"}, ts, true))
	mustAppend(t, l, txnBatch(t, 2, 0, 0, []string{"c0", "c1"}, ts, true))
	mustMarker(t, l, 1, 0, false, 0)
	mustMarker(t, l, 2, 0, true, 0)
	mustAppend(t, l, txnBatch(t, 1, 0, 2, []string{"e0"}, ts, true))
	mustMarker(t, l, 1, 0, true, 0)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, txnBatch(t, -1, -1, -1, []string{fmt.Sprintf("f%d", i%3)}, ts, false))
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txnBatch(t, -1, -1, -1, []string{"tail"}, ts, false))
	l.UpdateHighWatermark(l.LogEndOffset())
	if len(l.Segments()) < 3 {
		t.Fatalf("want several segments, got %d", len(l.Segments()))
	}
	abortedBefore := l.CollectAbortedTransactions(0, l.LogEndOffset())
	if len(abortedBefore) != 1 {
		t.Fatalf("aborted before cleaning: %+v", abortedBefore)
	}
	pass := func(name string) []string {
		t.Helper()
		if _, _, err := compact(l, 0, false, clock.Now(), 1<<20, nil); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := batchesSummary(t, l)
		t.Logf("%s: %v", name, got)
		return got
	}
	got := pass("pass 1")
	if contains(got, "k:a0") || contains(got, "k:a1") {
		t.Fatal("aborted data survived cleaning")
	}
	for _, want := range []string{"k:c0", "k:c1", "k:e0", "ABORT(1)", "COMMIT(2)", "COMMIT(1)"} {
		if !contains(got, want) {
			t.Fatalf("pass 1 lost %s", want)
		}
	}
	if got := l.CollectAbortedTransactions(0, l.LogEndOffset()); !reflect.DeepEqual(got, abortedBefore) {
		t.Fatalf("cleaned .txnindex: %+v, want %+v", got, abortedBefore)
	}
	clock.Add(time.Millisecond)
	got = pass("pass 2")
	if !contains(got, "ABORT(1)") {
		t.Fatal("abort marker removed before its delete horizon")
	}
	if got := l.CollectAbortedTransactions(0, l.LogEndOffset()); len(got) != 0 {
		t.Fatalf("index entry kept for a transaction without data: %+v", got)
	}
	clock.Add(2 * time.Second)
	got = pass("pass 3")
	if contains(got, "ABORT(1)") {
		t.Fatal("abort marker kept past its delete horizon")
	}
	for _, want := range []string{"k:c0", "k:c1", "k:e0", "COMMIT(2)", "COMMIT(1)"} {
		if !contains(got, want) {
			t.Fatalf("pass 3 lost %s", want)
		}
	}
	// Cleaned segments still replay into the same producer state.
	dst := filepath.Join(t.TempDir(), "txn-0")
	copyDir(t, dir, dst)
	l2 := openTestLog(t, dst, testLogOpts{clock: clock, cfg: cfg, rp: 0})
	defer l2.Close()
	if l2.HasOngoingTransaction(1) || l2.HasOngoingTransaction(2) {
		t.Fatal("recovery of the cleaned log reopened a transaction")
	}
}

// The LSO bounds the cleaner: nothing from the segment holding an open transaction's first
// offset on is cleaned.
func TestCleanerStopsAtLastStableOffset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	cfg := map[string]string{"cleanup.policy": "compact", "segment.bytes": "400"}
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: cfg})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	for i := 0; i < 6; i++ {
		mustAppend(t, l, txnBatch(t, -1, -1, -1, []string{"k"}, ts, false))
	}
	open := mustAppend(t, l, txnBatch(t, 7, 0, 0, []string{"t"}, ts, true))
	for i := 0; i < 12; i++ {
		mustAppend(t, l, txnBatch(t, -1, -1, -1, []string{"k"}, ts, false))
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	wantLSO(t, l, open.FirstOffset)
	segs := l.Segments()
	if len(segs) < 4 {
		t.Fatalf("want several segments, got %d", len(segs))
	}
	stats, _, err := compact(l, 0, false, clock.Now(), 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	holding := segs[floorSegmentInfo(segs, open.FirstOffset)].BaseOffset
	if stats.EndOffset > holding {
		t.Fatalf("cleaned up to %d, past the segment %d holding the open transaction at %d", stats.EndOffset, holding, open.FirstOffset)
	}
	var ks int
	for _, s := range batchesSummary(t, l) {
		if s == "k:k" {
			ks++
		}
	}
	if ks < 13 {
		t.Fatalf("records above the LSO were compacted: %d copies of k left", ks)
	}
	// The transaction commits: the rest becomes cleanable.
	mustMarker(t, l, 7, 0, true, 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txnBatch(t, -1, -1, -1, []string{"z"}, ts, false))
	l.UpdateHighWatermark(l.LogEndOffset())
	if _, _, err := compact(l, 0, false, clock.Now(), 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	ks = 0
	for _, s := range batchesSummary(t, l) {
		if s == "k:k" {
			ks++
		}
	}
	if ks != 1 {
		t.Fatalf("%d copies of k after the transaction completed, want 1", ks)
	}
}

func floorSegmentInfo(segs []SegmentInfo, off int64) int {
	i := 0
	for j, s := range segs {
		if s.BaseOffset <= off {
			i = j
		}
	}
	return i
}

// A follower appending many batches at once computes each aborted transaction's LSO as of
// its own marker, as the leader did batch by batch, and becomes a leader with the same LSO.
func TestTxnFollowerMultiBatchAppend(t *testing.T) {
	clock := newStepClock(1_700_000_000_000)
	ts := clock.Now().UnixMilli()
	l := openTestLog(t, filepath.Join(t.TempDir(), "txn-0"), testLogOpts{clock: clock})
	defer l.Close()
	mustAppend(t, l, txnBatch(t, 1, 0, 0, keysN("a", 1), ts, true)) // 0
	mustAppend(t, l, txnBatch(t, 2, 0, 0, keysN("b", 1), ts, true)) // 1
	mustMarker(t, l, 1, 0, false, 0)                                // 2
	mustAppend(t, l, txnBatch(t, 3, 0, 0, keysN("c", 1), ts, true)) // 3
	mustMarker(t, l, 2, 0, false, 0)                                // 4
	mustAppend(t, l, txnBatch(t, 1, 0, 1, keysN("d", 1), ts, true)) // 5
	want := []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 1},
		{ProducerID: 2, FirstOffset: 1, LastOffset: 4, LastStableOffset: 3}}
	if got := l.CollectAbortedTransactions(0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("leader: %+v", got)
	}
	f := openTestLog(t, filepath.Join(t.TempDir(), "txn-0"), testLogOpts{clock: clock})
	defer f.Close()
	ri, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := ri.Bytes()
	if _, err := f.AppendAsFollower(data); err != nil {
		t.Fatal(err)
	}
	if got := f.CollectAbortedTransactions(0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("follower: %+v", got)
	}
	f.UpdateHighWatermark(f.LogEndOffset())
	wantLSO(t, f, 3)
	if got := f.OngoingTransactions(); !reflect.DeepEqual(got, [][2]int64{{3, 3}, {1, 5}}) {
		t.Fatalf("follower ongoing %v", got)
	}
	// As leader now: the coordinator's markers complete both transactions.
	mustMarker(t, f, 3, 0, true, 1)
	mustMarker(t, f, 1, 0, true, 1)
	f.UpdateHighWatermark(f.LogEndOffset())
	wantLSO(t, f, f.LogEndOffset())
}

// A failed .txnindex write takes the log offline (KAFKA_STORAGE_ERROR); after a restart,
// recovery writes the entry from the log.
func TestTxnIndexWriteFailureAndRecovery(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	efs := newErrorFS()
	var ioErrs atomic.Int32
	l := openTestLog(t, dir, testLogOpts{clock: clock, fs: efs, onIOErr: func(error) { ioErrs.Add(1) }})
	ts := clock.Now().UnixMilli()
	mustAppend(t, l, txnBatch(t, 1, 0, 0, keysN("a", 2), ts, true))
	efs.arm(TxnIndexFileSuffix, true, false)
	if _, err := l.AppendTxnMarker(1, 0, false, 0, 0); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("marker with a failing .txnindex: %v", err)
	}
	if !l.IsOffline() || ioErrs.Load() == 0 {
		t.Fatal("log not offline after a failed index write")
	}
	efs.disarm()
	l.Close()
	l2 := openTestLog(t, dir, testLogOpts{clock: clock, rp: 0})
	defer l2.Close()
	want := []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3}}
	if got := l2.CollectAbortedTransactions(0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("after recovery: %+v", got)
	}
}

// A read's AbortedTxnUpperBound is LocalLog.addAbortedTransactions' bound: the first
// offset-index entry at or past the end of the returned bytes, else the next segment's base
// offset, else the log end. The aborted transactions collected up to it are those that may
// have data in the returned bytes, not every later one.
func TestTxnReadAbortedUpperBound(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: map[string]string{"index.interval.bytes": "1"}})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	first := txnBatch(t, 10, 0, 0, keysN("a", 2), ts, true)
	mustAppend(t, l, first)                                          // 0-1, at position 0: no index entry
	mustMarker(t, l, 10, 0, false, 0)                                // 2, indexed at the end of the first batch
	mustAppend(t, l, txnBatch(t, 11, 0, 0, keysN("b", 1), ts, true)) // 3
	mustMarker(t, l, 11, 0, false, 0)                                // 4
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txnBatch(t, 12, 0, 0, keysN("c", 1), ts, true)) // 5
	mustMarker(t, l, 12, 0, false, 0)                                // 6
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txnBatch(t, 13, 0, 0, keysN("d", 1), ts, false)) // 7, plain
	l.UpdateHighWatermark(l.LogEndOffset())
	if lso := l.LastStableOffset(); lso != 8 {
		t.Fatalf("LSO %d, want 8", lso)
	}
	pids := func(txns []AbortedTxn) []int64 {
		var out []int64
		for _, a := range txns {
			out = append(out, a.ProducerID)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		offset    int64
		maxBytes  int32
		wantBound int64
		wantPIDs  []int64
	}{
		{"first batch only: the index entry past it", 0, int32(len(first)), 2, []int64{10}},
		{"whole first segment: the next segment's base", 0, 1 << 20, 5, []int64{10, 11}},
		{"second segment: the next segment's base", 5, 1 << 20, 7, []int64{12}},
		{"active segment: the log end", 7, 1 << 20, 8, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ri, err := l.Read(tc.offset, tc.maxBytes, l.LastStableOffset(), true)
			if err != nil {
				t.Fatal(err)
			}
			if ri.Size == 0 || ri.AbortedTxnUpperBound != tc.wantBound {
				t.Fatalf("read %d bytes, aborted upper bound %d, want %d", ri.Size, ri.AbortedTxnUpperBound, tc.wantBound)
			}
			if got := pids(l.CollectAbortedTransactions(tc.offset, ri.AbortedTxnUpperBound)); !slices.Equal(got, tc.wantPIDs) {
				t.Fatalf("aborted producers %v, want %v", got, tc.wantPIDs)
			}
		})
	}
	if ri, err := l.Read(8, 1<<20, 8, true); err != nil || ri.Size != 0 || ri.AbortedTxnUpperBound != -1 {
		t.Fatalf("empty read: %+v %v", ri, err)
	}
}

// OffsetIndex.FetchUpperBoundOffset is the smallest entry whose position is at or past the
// target (AbstractIndex.smallestUpperBoundSlotFor by position).
func TestOffsetIndexFetchUpperBound(t *testing.T) {
	oi, err := openOffsetIndex(OSFS{}, filepath.Join(t.TempDir(), "00000000000000000100.index"), 100, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer oi.close()
	if _, ok := oi.FetchUpperBoundOffset(0); ok {
		t.Fatal("an empty index has an upper bound")
	}
	for i := int64(0); i < 10; i++ {
		if err := oi.Append(102+i*3, 50+i*100); err != nil { // (102, 50), (105, 150), ... (129, 950)
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		pos, off int64
		ok       bool
	}{{0, 102, true}, {50, 102, true}, {51, 105, true}, {150, 105, true}, {949, 129, true}, {950, 129, true}, {951, 0, false}} {
		if off, ok := oi.FetchUpperBoundOffset(c.pos); off != c.off || ok != c.ok {
			t.Errorf("upper bound for position %d = (%d, %t), want (%d, %t)", c.pos, off, ok, c.off, c.ok)
		}
	}
}
