package logstore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// tsBatch builds a producer batch whose records carry the given timestamps (base offset 0).
func tsBatch(t testing.TB, codec recordbatch.Codec, ts ...int64) []byte {
	t.Helper()
	base, maxTs := ts[0], ts[0]
	for _, x := range ts {
		base, maxTs = min(base, x), max(maxTs, x)
	}
	recs := make([]recordbatch.Record, len(ts))
	for i, x := range ts {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), TimestampDelta: x - base, Value: []byte("value-value-value")}
	}
	h := recordbatch.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: int32(len(ts) - 1), BaseTimestamp: base,
		MaxTimestamp: maxTs, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	b, err := recordbatch.Build(h, recs, codec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantMaxTimestamp(t *testing.T, l *Log, wantTs, wantOff int64, wantEpoch int32) {
	t.Helper()
	ts, off, ep, found, err := l.MaxTimestampOffset()
	if err != nil || !found || ts != wantTs || off != wantOff || ep != wantEpoch {
		t.Fatalf("MaxTimestampOffset = ts %d offset %d epoch %d found %v err %v; want ts %d offset %d epoch %d",
			ts, off, ep, found, err, wantTs, wantOff, wantEpoch)
	}
}

// KAFKA-16310: MAX_TIMESTAMP answers the first record holding the largest timestamp, not the
// last offset of its batch, from leader and follower appends, across segments and after a
// reopen (the segment state then comes from the time index and a scan).
func TestMaxTimestampOffsetIsTheRecord(t *testing.T) {
	t.Parallel()
	clock := newStepClock(1_700_000_000_000)
	t0 := clock.Now().UnixMilli()
	dir := filepath.Join(t.TempDir(), "mt-0")
	cfg := map[string]string{"segment.bytes": "600", "index.interval.bytes": "100"}
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: cfg})

	if _, _, _, found, err := l.MaxTimestampOffset(); found || err != nil {
		t.Fatalf("empty log: found %v err %v", found, err)
	}
	// Offsets 0-4, then 5-9 whose max (t0+50) is at 6 and again at 8, then 10-14 lower.
	if _, err := l.AppendAsLeader(tsBatch(t, recordbatch.None, t0, t0+1, t0+2, t0+3, t0+4), 2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(tsBatch(t, recordbatch.Gzip, t0+10, t0+50, t0+20, t0+50, t0+5), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(tsBatch(t, recordbatch.None, t0+30, t0+31, t0+32, t0+33, t0+34), 3); err != nil {
		t.Fatal(err)
	}
	wantMaxTimestamp(t, l, t0+50, 6, 3)

	// Many later batches in further segments, all below the max: the answer stays in the
	// first segment even though later segments have time-index entries.
	for i := 0; i < 20; i++ {
		if _, err := l.AppendAsLeader(tsBatch(t, recordbatch.None, t0+40, t0+41, t0+42), 4); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.Segments()); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
	wantMaxTimestamp(t, l, t0+50, 6, 3)

	// A new maximum in the middle of a batch in a later segment.
	if _, err := l.AppendAsLeader(tsBatch(t, recordbatch.LZ4, t0+60, t0+99, t0+70), 5); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	wantMaxTimestamp(t, l, t0+99, leo-2, 5)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened (clean and after recovery), the segments rebuild their state from the indexes
	// and the log; the answer is the same.
	for _, clean := range []bool{true, false} {
		l = openTestLog(t, dir, testLogOpts{clock: clock, cfg: cfg, clean: clean})
		wantMaxTimestamp(t, l, t0+99, leo-2, 5)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// A follower appends the leader's batches as they are.
	fdir := filepath.Join(t.TempDir(), "mt-1")
	f := openTestLog(t, fdir, testLogOpts{clock: clock, cfg: cfg})
	defer f.Close()
	b := tsBatch(t, recordbatch.Snappy, t0+7, t0+9, t0+8)
	recordbatch.Batch(b).SetPartitionLeaderEpoch(7)
	if _, err := f.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	wantMaxTimestamp(t, f, t0+9, 1, 7)
}

// With LogAppendTime every record of a batch has the batch's time: the earliest batch with
// the largest time answers with its first record.
func TestMaxTimestampOffsetLogAppendTime(t *testing.T) {
	t.Parallel()
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, filepath.Join(t.TempDir(), "lat-0"), testLogOpts{clock: clock,
		cfg: map[string]string{"message.timestamp.type": "LogAppendTime"}})
	defer l.Close()
	old := clock.Now().UnixMilli() - 1000
	if _, err := l.AppendAsLeader(tsBatch(t, recordbatch.None, old, old+1, old+2), 0); err != nil {
		t.Fatal(err)
	}
	clock.Add(5 * time.Millisecond)
	now := clock.Now().UnixMilli()
	for i := 0; i < 2; i++ {
		if _, err := l.AppendAsLeader(tsBatch(t, recordbatch.None, old, old+9, old+2), 1); err != nil {
			t.Fatal(err)
		}
	}
	wantMaxTimestamp(t, l, now, 3, 1)
}

// Records without timestamps (-1, as up-converted magic 0 messages carry): the first one
// answers, with timestamp -1, as Kafka 3.8 finds the batch whose max timestamp is the
// segment's (-1).
func TestMaxTimestampOffsetNoTimestamps(t *testing.T) {
	t.Parallel()
	l := openTestLog(t, filepath.Join(t.TempDir(), "nots-0"), testLogOpts{})
	defer l.Close()
	for i := 0; i < 2; i++ {
		if _, err := l.AppendAsLeader(tsBatch(t, recordbatch.None, -1, -1), 0); err != nil {
			t.Fatal(err)
		}
	}
	wantMaxTimestamp(t, l, -1, 0, 0)
}
