package logstore

// Control batches of a producer that are not a readable COMMIT/ABORT marker: Kafka's
// ProducerAppendInfo.append reads the first record with EndTransactionMarker.deserialize and
// throws, so a follower's append fails before anything is written (the fetcher retries the
// offset after a back-off) and recovery stops at the batch.

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// controlBatch builds a transactional control batch of pid with the given records at base.
func controlBatch(t testing.TB, pid int64, base int64, ts int64, recs ...recordbatch.Record) []byte {
	t.Helper()
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
	h := recordbatch.Header{Attributes: recordbatch.AttrTransactional | recordbatch.AttrControl, PartitionLeaderEpoch: 0,
		LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: pid, ProducerEpoch: 0, BaseSequence: -1}
	b, err := recordbatch.Build(h, recs, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	return at(b, base)
}

// at stamps b with base offset base and leader epoch 0.
func at(b []byte, base int64) []byte {
	rb := recordbatch.Batch(append([]byte(nil), b...))
	rb.SetBaseOffset(base)
	rb.SetPartitionLeaderEpoch(0)
	rb.SetCRC()
	return rb
}

var (
	commitKey   = []byte{0, 0, 0, 1}
	abortKey    = []byte{0, 0, 0, 0}
	markerValue = []byte{0, 0, 0, 0, 0, 3} // version 0, coordinator epoch 3
)

func badMarkers() map[string][]recordbatch.Record {
	return map[string][]recordbatch.Record{
		"negative key version":   {{Key: []byte{0xff, 0xff, 0, 1}, Value: markerValue}},
		"negative value version": {{Key: abortKey, Value: []byte{0xff, 0xff, 0, 0, 0, 3}}},
		"leader change type":     {{Key: []byte{0, 0, 0, 2}, Value: markerValue}},
		"unknown type":           {{Key: []byte{0, 0, 0, 9}, Value: markerValue}},
		"short key":              {{Key: []byte{0, 0}, Value: markerValue}},
		"null key":               {{Value: markerValue}},
		"short value":            {{Key: commitKey, Value: []byte{0, 0, 0, 3}}},
		"null value":             {{Key: commitKey}},
		// Kafka reads the first record only: a marker after a broken record does not count.
		"marker second": {{Key: []byte{0, 0, 0, 2}, Value: markerValue}, {Key: commitKey, Value: markerValue}},
	}
}

func TestFollowerRefusesControlBatchThatIsNotAMarker(t *testing.T) {
	for name, recs := range badMarkers() {
		t.Run(name, func(t *testing.T) {
			clock := newStepClock(1_700_000_000_000)
			l := openTestLog(t, filepath.Join(t.TempDir(), "txn-0"), testLogOpts{clock: clock})
			defer l.Close()
			ts := clock.Now().UnixMilli()
			if _, err := l.AppendAsFollower(at(txnBatch(t, 5, 0, 0, keysN("a", 2), ts, true), 0)); err != nil {
				t.Fatal(err)
			}
			// With data of another batch before it in the same fetch: the whole append fails.
			fetch := append(at(txnBatch(t, 6, 0, 0, keysN("b", 1), ts, false), 2), controlBatch(t, 5, 3, ts, recs...)...)
			if _, err := l.AppendAsFollower(fetch); !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("follower append: %v, want ErrInvalidRecord", err)
			}
			if leo := l.LogEndOffset(); leo != 2 {
				t.Fatalf("log end offset %d after a refused append, want 2", leo)
			}
			if !l.HasOngoingTransaction(5) {
				t.Fatal("the refused batch closed the transaction")
			}
			// The leader's real marker then goes through.
			if _, err := l.AppendAsFollower(at(endTxnMarkerBatch(5, 0, false, 3, ts), 2)); err != nil {
				t.Fatal(err)
			}
			if l.HasOngoingTransaction(5) || len(l.CollectAbortedTransactions(0, 10)) != 1 {
				t.Fatalf("after the marker: ongoing %t, aborted %v", l.HasOngoingTransaction(5), l.CollectAbortedTransactions(0, 10))
			}
		})
	}
}

func TestFollowerTakesFirstRecordMarker(t *testing.T) {
	// A marker followed by anything: the first record decides, as in Kafka.
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, filepath.Join(t.TempDir(), "txn-0"), testLogOpts{clock: clock})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	if _, err := l.AppendAsFollower(at(txnBatch(t, 5, 0, 0, keysN("a", 2), ts, true), 0)); err != nil {
		t.Fatal(err)
	}
	b := controlBatch(t, 5, 2, ts, recordbatch.Record{Key: abortKey, Value: markerValue}, recordbatch.Record{Key: []byte{0xff}})
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if l.HasOngoingTransaction(5) || len(l.CollectAbortedTransactions(0, 10)) != 1 {
		t.Fatalf("ongoing %t, aborted %v", l.HasOngoingTransaction(5), l.CollectAbortedTransactions(0, 10))
	}
}

func TestRecoveryCutsControlBatchThatIsNotAMarker(t *testing.T) {
	for name, recs := range badMarkers() {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "txn-0")
			clock := newStepClock(1_700_000_000_000)
			l := openTestLog(t, dir, testLogOpts{clock: clock})
			ts := clock.Now().UnixMilli()
			if _, err := l.AppendAsFollower(at(txnBatch(t, 5, 0, 0, keysN("a", 2), ts, true), 0)); err != nil {
				t.Fatal(err)
			}
			path := l.segments()[0].logPath()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Bytes no append path writes: the bad batch, then a good batch after it.
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			tail := append(controlBatch(t, 5, 2, ts, recs...), at(txnBatch(t, 6, 0, 0, keysN("c", 1), ts, false), 2+int64(len(recs)))...)
			if _, err := f.Write(tail); err != nil {
				t.Fatal(err)
			}
			f.Close()
			r := openTestLog(t, dir, testLogOpts{clock: clock, clean: false, rp: 0})
			defer r.Close()
			if leo := r.LogEndOffset(); leo != 2 {
				t.Fatalf("recovered log end offset %d, want 2 (cut at the control batch)", leo)
			}
			if !r.HasOngoingTransaction(5) {
				t.Fatal("the transaction before the cut is not open")
			}
		})
	}
}

func TestCleanLoadFailsOnControlBatchThatIsNotAMarker(t *testing.T) {
	// A flushed segment is not recovered: rebuilding producer state over the batch fails
	// the load, as loadProducersFromRecords throws in Kafka.
	dir := filepath.Join(t.TempDir(), "txn-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	ts := clock.Now().UnixMilli()
	if _, err := l.AppendAsFollower(at(txnBatch(t, 5, 0, 0, keysN("a", 2), ts, true), 0)); err != nil {
		t.Fatal(err)
	}
	path := l.segments()[0].logPath()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(controlBatch(t, 5, 2, ts, recordbatch.Record{Key: []byte{0, 0, 0, 2}, Value: markerValue})); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cfg, err := NewLogConfig(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenLog(dir, LogOpenOptions{Config: cfg, Clock: clock.Now, Log: logT(t), CleanShutdown: true, RecoveryPoint: 3})
	if err == nil {
		r.Close()
		t.Fatal("clean load over a control batch that is not a marker succeeded")
	}
	if !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("load error %v, want ErrInvalidRecord", err)
	}
}
