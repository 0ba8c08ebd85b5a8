package logstore

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// idemBatch builds a producer batch of n records for producer pid/epoch starting at seq.
func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Value: []byte{byte('a' + i%26)}}
	}
	h := recordbatch.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: int32(n - 1), BaseTimestamp: ts, MaxTimestamp: ts,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
	b, err := recordbatch.Build(h, recs, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func appendIdem(t testing.TB, l *Log, pid int64, epoch int16, seq int32, n int, ts int64) (AppendInfo, error) {
	t.Helper()
	return l.AppendAsLeader(idemBatch(t, pid, epoch, seq, n, ts), 0)
}

func mustAppendIdem(t testing.TB, l *Log, pid int64, epoch int16, seq int32, n int, ts int64) AppendInfo {
	t.Helper()
	info, err := appendIdem(t, l, pid, epoch, seq, n, ts)
	if err != nil {
		t.Fatalf("append pid %d epoch %d seq %d: %v", pid, epoch, seq, err)
	}
	return info
}

func producerState(t testing.TB, l *Log, pid int64) (ProducerStateInfo, bool) {
	t.Helper()
	for _, p := range l.ProducerStates() {
		if p.ProducerID == pid {
			return p, true
		}
	}
	return ProducerStateInfo{}, false
}

// The direct check of issue 8: the same batch (producer id, epoch, base sequence) sent
// twice gets the same base offset both times and is stored once.
func TestProducerStateDuplicateReturnsOriginalOffsets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idem-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	mustAppendIdem(t, l, -1, -1, -1, 2, ts) // a plain batch first: offsets 0-1
	first := mustAppendIdem(t, l, 7, 0, 0, 3, ts)
	second := mustAppendIdem(t, l, 7, 0, 3, 2, ts)
	if first.FirstOffset != 2 || first.LastOffset != 4 || second.FirstOffset != 5 {
		t.Fatalf("offsets: first %+v second %+v", first, second)
	}
	leo := l.LogEndOffset()
	for name, tc := range map[string]struct {
		seq        int32
		n          int
		wantFirst  int64
		wantLast   int64
		duplicated bool
	}{
		"retry of the first batch":  {0, 3, 2, 4, true},
		"retry of the second batch": {3, 2, 5, 6, true},
	} {
		t.Run(name, func(t *testing.T) {
			info := mustAppendIdem(t, l, 7, 0, tc.seq, tc.n, ts)
			if !info.Duplicate || info.FirstOffset != tc.wantFirst || info.LastOffset != tc.wantLast {
				t.Fatalf("got %+v, want duplicate [%d, %d]", info, tc.wantFirst, tc.wantLast)
			}
			if info.LogAppendTime != ts {
				t.Fatalf("LogAppendTime %d, want the original batch's timestamp %d (Kafka)", info.LogAppendTime, ts)
			}
			if l.LogEndOffset() != leo {
				t.Fatalf("LEO moved to %d", l.LogEndOffset())
			}
		})
	}
	// Stored once.
	n := 0
	for _, b := range readAllBatches(t, l, 0) {
		if b.ProducerID() == 7 {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d batches of producer 7 stored, want 2", n)
	}
}

func TestProducerStateErrors(t *testing.T) {
	ts := time.Now().UnixMilli()
	type step struct {
		pid     int64
		epoch   int16
		seq     int32
		n       int
		wantErr error // nil: appended
		dup     bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"gap is out of order", []step{{1, 0, 0, 2, nil, false}, {1, 0, 3, 1, ErrOutOfOrderSequence, false}}},
		{"sequence behind is out of order", []step{{1, 0, 0, 5, nil, false}, {1, 0, 2, 1, ErrOutOfOrderSequence, false}}},
		{"older epoch is fenced", []step{{1, 3, 0, 1, nil, false}, {1, 2, 1, 1, ErrInvalidProducerEpoch, false}}},
		{"older epoch with any sequence is fenced", []step{{1, 3, 0, 1, nil, false}, {1, 2, 0, 1, ErrInvalidProducerEpoch, false}}},
		{"epoch bump must start at 0", []step{{1, 0, 0, 3, nil, false}, {1, 1, 3, 1, ErrOutOfOrderSequence, false}}},
		{"epoch bump at 0 is accepted", []step{{1, 0, 0, 3, nil, false}, {1, 1, 0, 1, nil, false}, {1, 1, 1, 1, nil, false}}},
		{"unknown producer: any sequence", []step{{1, 0, 42, 1, nil, false}, {1, 0, 43, 1, nil, false}}},
		{"unknown producer: any epoch and sequence", []step{{2, 9, 1000, 1, nil, false}}},
		{"sequence wraps after Int.MAX", []step{{1, 0, math.MaxInt32 - 1, 2, nil, false}, {1, 0, 0, 1, nil, false}}},
		{"batch across the wrap", []step{{1, 0, math.MaxInt32 - 1, 4, nil, false}, {1, 0, 2, 1, nil, false}, {1, 0, math.MaxInt32 - 1, 4, nil, true}}},
		{"only the last five batches are remembered", []step{
			{1, 0, 0, 1, nil, false}, {1, 0, 1, 1, nil, false}, {1, 0, 2, 1, nil, false}, {1, 0, 3, 1, nil, false},
			{1, 0, 4, 1, nil, false}, {1, 0, 5, 1, nil, false},
			{1, 0, 1, 1, nil, true},                    // 5th newest: still a duplicate
			{1, 0, 0, 1, ErrOutOfOrderSequence, false}, // 6th newest: forgotten, so out of order (as Kafka)
		}},
		{"duplicate needs the same epoch", []step{{1, 0, 0, 1, nil, false}, {1, 1, 0, 1, nil, false}, {1, 0, 0, 1, ErrInvalidProducerEpoch, false}}},
		{"duplicate needs the same range", []step{{1, 0, 0, 3, nil, false}, {1, 0, 0, 2, ErrOutOfOrderSequence, false}}},
		{"producers are independent", []step{{1, 0, 0, 1, nil, false}, {2, 0, 0, 1, nil, false}, {1, 0, 1, 1, nil, false}, {2, 0, 2, 1, ErrOutOfOrderSequence, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openTestLog(t, filepath.Join(t.TempDir(), "idem-0"), testLogOpts{})
			defer l.Close()
			for i, s := range tc.steps {
				leo := l.LogEndOffset()
				info, err := appendIdem(t, l, s.pid, s.epoch, s.seq, s.n, ts)
				switch {
				case s.wantErr != nil:
					if !errors.Is(err, s.wantErr) {
						t.Fatalf("step %d: err %v, want %v", i, err, s.wantErr)
					}
					if l.LogEndOffset() != leo {
						t.Fatalf("step %d: a rejected batch moved the LEO", i)
					}
				case err != nil:
					t.Fatalf("step %d: %v", i, err)
				case info.Duplicate != s.dup:
					t.Fatalf("step %d: duplicate=%v, want %v (%+v)", i, info.Duplicate, s.dup, info)
				}
			}
		})
	}
}

// A failed append (here: the same producer's batches out of order in one multi-batch
// append) leaves the state untouched.
func TestProducerStateMultiBatchAppendIsAtomic(t *testing.T) {
	l := openTestLog(t, filepath.Join(t.TempDir(), "idem-0"), testLogOpts{})
	defer l.Close()
	ts := time.Now().UnixMilli()
	mustAppendIdem(t, l, 1, 0, 0, 1, ts)
	two := append(idemBatch(t, 1, 0, 1, 1, ts), idemBatch(t, 1, 0, 3, 1, ts)...)
	if _, err := l.AppendAsLeader(two, 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("err %v", err)
	}
	if p, _ := producerState(t, l, 1); p.LastSequence != 0 {
		t.Fatalf("state changed by a rejected append: %+v", p)
	}
	two = append(idemBatch(t, 1, 0, 1, 1, ts), idemBatch(t, 1, 0, 2, 2, ts)...)
	if _, err := l.AppendAsLeader(two, 0); err != nil {
		t.Fatal(err)
	}
	if p, _ := producerState(t, l, 1); p.LastSequence != 3 || p.RetainedBatches != 3 {
		t.Fatalf("state %+v", p)
	}
}

// Followers apply the leader's batches without checks; the state they build lets them,
// as the next leader, deduplicate retries of batches written under the old leader.
func TestProducerStateFollowerThenLeader(t *testing.T) {
	l := openTestLog(t, filepath.Join(t.TempDir(), "idem-0"), testLogOpts{})
	defer l.Close()
	ts := time.Now().UnixMilli()
	var off int64
	for _, s := range []struct {
		epoch int16
		seq   int32
		n     int
	}{{0, 0, 2}, {0, 10, 1} /* a gap: not checked */, {5, 7, 1}, {4, 8, 1} /* older epoch: only warned */, {5, 8, 2}} {
		b := recordbatch.Batch(idemBatch(t, 9, s.epoch, s.seq, s.n, ts))
		b.SetBaseOffset(off)
		b.SetPartitionLeaderEpoch(1)
		if _, err := l.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
		off = b.NextOffset()
	}
	p, _ := producerState(t, l, 9)
	if p.ProducerEpoch != 5 || p.LastSequence != 9 || p.LastOffset != off-1 {
		t.Fatalf("follower state %+v", p)
	}
	// Now leader: a retry of the last replicated batch is a duplicate with its offsets.
	info := mustAppendIdem(t, l, 9, 5, 8, 2, ts)
	if !info.Duplicate || info.FirstOffset != off-2 || info.LastOffset != off-1 {
		t.Fatalf("retry after becoming leader: %+v", info)
	}
	mustAppendIdem(t, l, 9, 5, 10, 1, ts)
	if _, err := appendIdem(t, l, 9, 5, 12, 1, ts); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap as leader: %v", err)
	}
}

// Golden bytes of a snapshot (ProducerStateManager.writeSnapshot, version 1), built field by
// field here and pinned as hex.
func TestProducerSnapshotGoldenBytes(t *testing.T) {
	entries := []*producerStateEntry{
		{producerID: 1001, epoch: 2, batches: []batchMetadata{{lastSeq: 4, lastOffset: 9, offsetDelta: 2, timestamp: 1700000000123}},
			lastTimestamp: 1700000000123, coordinatorEpoch: -1, currentTxnFirstOffset: -1},
		{producerID: 7, epoch: 0, batches: []batchMetadata{{lastSeq: 0, lastOffset: 3, offsetDelta: 0, timestamp: 1700000000000}},
			lastTimestamp: 1700000000000, coordinatorEpoch: -1, currentTxnFirstOffset: -1},
	}
	got := encodeProducerSnapshot(entries)

	var body bytes.Buffer
	w := func(v any) { _ = binary.Write(&body, binary.BigEndian, v) }
	w(int32(2))
	for _, e := range []struct {
		pid   int64
		epoch int16
		seq   int32
		off   int64
		delta int32
		ts    int64
	}{{7, 0, 0, 3, 0, 1700000000000}, {1001, 2, 4, 9, 2, 1700000000123}} {
		w(e.pid)
		w(e.epoch)
		w(e.seq)
		w(e.off)
		w(e.delta)
		w(e.ts)
		w(int32(-1)) // coordinatorEpoch
		w(int64(-1)) // currentTxnFirstOffset
	}
	var want bytes.Buffer
	_ = binary.Write(&want, binary.BigEndian, int16(1))
	_ = binary.Write(&want, binary.BigEndian, crc32.Checksum(body.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	want.Write(body.Bytes())
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("snapshot bytes\n got %x\nwant %x", got, want.Bytes())
	}
	const pinned = "0001" + "1c97cca5" + "00000002" +
		"0000000000000007" + "0000" + "00000000" + "0000000000000003" + "00000000" + "0000018bcfe56800" + "ffffffff" + "ffffffffffffffff" +
		"00000000000003e9" + "0002" + "00000004" + "0000000000000009" + "00000002" + "0000018bcfe5687b" + "ffffffff" + "ffffffffffffffff"
	if hex.EncodeToString(got) != pinned {
		t.Fatalf("snapshot bytes changed (a format change):\n got %x\nwant %s", got, pinned)
	}
	back, err := decodeProducerSnapshot(got)
	if err != nil || len(back) != 2 || back[1].producerID != 1001 || back[1].batches[0].firstSeq() != 2 || back[1].batches[0].firstOffset() != 7 {
		t.Fatalf("decode: %v %+v", err, back)
	}
	got[len(got)-1] ^= 1
	if _, err := decodeProducerSnapshot(got); !errors.Is(err, errCorruptSnapshot) {
		t.Fatalf("corrupt snapshot decoded: %v", err)
	}
}

// Snapshots are taken on roll (named after the new segment) and on close (at the LEO); a
// clean reopen replays nothing.
func TestProducerSnapshotsOnRollAndClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idem-0")
	cfg := map[string]string{"segment.bytes": "300"}
	l := openTestLog(t, dir, testLogOpts{cfg: cfg})
	ts := time.Now().UnixMilli()
	for i := int32(0); i < 12; i++ {
		mustAppendIdem(t, l, 1, 0, i*2, 2, ts)
	}
	snaps := l.ProducerSnapshotOffsets()
	segs := l.Segments()
	if len(segs) < 3 || len(snaps) != len(segs)-1 {
		t.Fatalf("segments %d, snapshots %v", len(segs), snaps)
	}
	for i, s := range snaps {
		if s != segs[i+1].BaseOffset {
			t.Fatalf("snapshot %d at %d, segment base %d", i, s, segs[i+1].BaseOffset)
		}
		if _, err := os.Stat(ProducerSnapshotFileName(dir, s)); err != nil {
			t.Fatal(err)
		}
	}
	// The roll snapshot at a segment base holds the state before that segment.
	data, err := os.ReadFile(ProducerSnapshotFileName(dir, snaps[0]))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := decodeProducerSnapshot(data)
	if err != nil || len(entries) != 1 || entries[0].batches[0].lastOffset != snaps[0]-1 {
		t.Fatalf("roll snapshot: %v %+v", err, entries)
	}
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ProducerSnapshotFileName(dir, leo)); err != nil {
		t.Fatalf("no snapshot at the LEO after close: %v", err)
	}
	l = openTestLog(t, dir, testLogOpts{cfg: cfg, clean: true})
	defer l.Close()
	if n := l.ProducerStateReplayedBatches(); n != 0 {
		t.Fatalf("clean reopen replayed %d batches", n)
	}
	if info := mustAppendIdem(t, l, 1, 0, 22, 2, ts); !info.Duplicate || info.LastOffset != leo-1 {
		t.Fatalf("retry of the last batch after a clean restart: %+v", info)
	}
	mustAppendIdem(t, l, 1, 0, 24, 1, ts)
}

// A kill-style reopen (no close, no clean-shutdown marker) loads the latest roll snapshot and
// replays only the active segment, and deduplicates as before. Many producers.
func TestProducerStateRecoveryReadsSnapshotNotWholeLog(t *testing.T) {
	src := filepath.Join(t.TempDir(), "idem-0")
	cfg := map[string]string{"segment.bytes": "2000"}
	l := openTestLog(t, src, testLogOpts{cfg: cfg})
	ts := time.Now().UnixMilli()
	const producers, rounds = 20, 15
	lastOffsets := map[int64]int64{}
	for r := int32(0); r < rounds; r++ {
		for p := int64(1); p <= producers; p++ {
			info := mustAppendIdem(t, l, 1000+p, 0, r*3, 3, ts)
			lastOffsets[1000+p] = info.LastOffset
		}
	}
	segs := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("want several segments, got %d", len(segs))
	}
	active := segs[len(segs)-1]
	wantReplay := int64(0)
	for _, b := range readAllBatches(t, l, active.BaseOffset) {
		if b.BaseOffset() >= active.BaseOffset {
			wantReplay++
		}
	}
	if wantReplay == 0 || wantReplay >= producers*rounds {
		t.Fatalf("bad test setup: %d batches in the active segment", wantReplay)
	}
	before := l.ProducerStates()
	// Kill: copy the files as they are (no close, no snapshot at the LEO).
	dst := filepath.Join(t.TempDir(), "idem-0")
	copyDir(t, src, dst)
	l.Close()

	var logs bytes.Buffer
	lg := logT(t)
	lg.Logger.SetOutput(&logs)
	c, err := NewLogConfig(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := OpenLog(dst, LogOpenOptions{Config: c, Log: lg, CleanShutdown: false, RecoveryPoint: active.BaseOffset})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	t.Log(logs.String())
	if n := l2.ProducerStateReplayedBatches(); n != wantReplay {
		t.Fatalf("recovery replayed %d batches, want %d (the active segment only; %d in the log)", n, wantReplay, producers*rounds)
	}
	if !strings.Contains(logs.String(), "loaded producer state from snapshot") ||
		!strings.Contains(logs.String(), "snapshot_offset="+itoa(active.BaseOffset)) {
		t.Fatalf("no log line naming the snapshot loaded:\n%s", logs.String())
	}
	after := l2.ProducerStates()
	if len(after) != len(before) {
		t.Fatalf("producers %d after recovery, %d before", len(after), len(before))
	}
	for i := range after {
		a, b := after[i], before[i]
		if a.ProducerID != b.ProducerID || a.ProducerEpoch != b.ProducerEpoch || a.LastSequence != b.LastSequence || a.LastOffset != b.LastOffset {
			t.Fatalf("producer %d: %+v after recovery, %+v before", a.ProducerID, a, b)
		}
	}
	for p := int64(1); p <= producers; p++ {
		info := mustAppendIdem(t, l2, 1000+p, 0, (rounds-1)*3, 3, ts)
		if !info.Duplicate || info.LastOffset != lastOffsets[1000+p] {
			t.Fatalf("producer %d: retry after recovery %+v, want duplicate ending at %d", 1000+p, info, lastOffsets[1000+p])
		}
		if _, err := appendIdem(t, l2, 1000+p, 0, rounds*3+1, 1, ts); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("gap after recovery: %v", err)
		}
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Truncation deletes snapshots beyond the new end and rebuilds the state; full truncation
// drops everything.
func TestProducerStateTruncation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idem-0")
	l := openTestLog(t, dir, testLogOpts{cfg: map[string]string{"segment.bytes": "300"}})
	defer l.Close()
	ts := time.Now().UnixMilli()
	var infos []AppendInfo
	for i := int32(0); i < 12; i++ {
		infos = append(infos, mustAppendIdem(t, l, 1, 0, i*2, 2, ts))
	}
	snaps := l.ProducerSnapshotOffsets()
	cut := infos[5].FirstOffset // keep batches 0-4
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.ProducerSnapshotOffsets() {
		if s > cut {
			t.Fatalf("snapshot %d beyond the truncation point %d (had %v)", s, cut, snaps)
		}
	}
	for _, s := range snaps {
		_, err := os.Stat(ProducerSnapshotFileName(dir, s))
		if s > cut && err == nil {
			t.Fatalf("snapshot file %d still there", s)
		}
	}
	p, _ := producerState(t, l, 1)
	if p.LastSequence != 9 || p.LastOffset != infos[4].LastOffset {
		t.Fatalf("state after truncation %+v", p)
	}
	// The producer's retry of batch 5 is a new append again, in sequence.
	if info := mustAppendIdem(t, l, 1, 0, 10, 2, ts); info.Duplicate || info.FirstOffset != cut {
		t.Fatalf("append after truncation %+v", info)
	}
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if len(l.ProducerStates()) != 0 || len(l.ProducerSnapshotOffsets()) != 0 {
		t.Fatalf("state after full truncation: %v %v", l.ProducerStates(), l.ProducerSnapshotOffsets())
	}
	mustAppendIdem(t, l, 1, 0, 77, 1, ts) // unknown again: any sequence
}

// Retention deletes the snapshots of deleted segments; the one at the new log start stays.
func TestProducerSnapshotsRetention(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idem-0")
	l := openTestLog(t, dir, testLogOpts{cfg: map[string]string{"segment.bytes": "300"}})
	defer l.Close()
	ts := time.Now().UnixMilli()
	for i := int32(0); i < 12; i++ {
		mustAppendIdem(t, l, 1, 0, i*2, 2, ts)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	segs := l.Segments()
	n, err := l.DeleteOldSegments(func(s SegmentInfo, next *SegmentInfo) bool { return s.BaseOffset < segs[2].BaseOffset }, "test")
	if err != nil || n != 2 {
		t.Fatalf("deleted %d: %v", n, err)
	}
	for _, s := range l.ProducerSnapshotOffsets() {
		if s < l.LogStartOffset() {
			t.Fatalf("snapshot %d below the log start %d", s, l.LogStartOffset())
		}
	}
	if _, err := os.Stat(ProducerSnapshotFileName(dir, segs[1].BaseOffset)); err == nil {
		t.Fatal("snapshot of a deleted segment is still on disk")
	}
	if _, err := os.Stat(ProducerSnapshotFileName(dir, segs[2].BaseOffset)); err != nil {
		t.Fatalf("snapshot at the log start: %v", err)
	}
	// The producer is still known (Kafka keeps state past retention).
	if info := mustAppendIdem(t, l, 1, 0, 22, 2, ts); !info.Duplicate {
		t.Fatalf("retry after retention: %+v", info)
	}
}

// producer.id.expiration.ms: an idle producer is forgotten, then any sequence is accepted.
func TestProducerStateExpiry(t *testing.T) {
	clock := newStepClock(1_700_000_000_000)
	c, _ := NewLogConfig(nil, nil)
	l, err := OpenLog(filepath.Join(t.TempDir(), "idem-0"), LogOpenOptions{Config: c, Clock: clock.Now, Log: logT(t),
		ProducerIDExpirationMs: 60_000, ProducerIDExpirationCheckIntervalMs: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ts := clock.Now().UnixMilli()
	mustAppendIdem(t, l, 1, 0, 0, 1, ts)
	mustAppendIdem(t, l, 2, 0, 0, 1, ts)
	clock.Add(30 * time.Second)
	mustAppendIdem(t, l, 2, 0, 1, 1, clock.Now().UnixMilli())
	clock.Add(40 * time.Second) // producer 1 idle 70 s, producer 2 40 s
	if n := l.RemoveExpiredProducers(); n != 1 {
		t.Fatalf("expired %d producers, want 1", n)
	}
	if _, ok := producerState(t, l, 1); ok {
		t.Fatal("producer 1 not expired")
	}
	mustAppendIdem(t, l, 1, 0, 50, 1, clock.Now().UnixMilli()) // unknown again
	if _, err := appendIdem(t, l, 2, 0, 5, 1, clock.Now().UnixMilli()); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("producer 2 should still be checked: %v", err)
	}
	// Appends run the check once per interval too.
	clock.Add(2 * time.Minute)
	mustAppendIdem(t, l, 3, 0, 0, 1, clock.Now().UnixMilli())
	if _, ok := producerState(t, l, 2); ok {
		t.Fatal("producer 2 not expired by the periodic check")
	}
}

// A corrupt snapshot is deleted and the next older one (or the log) is used.
func TestProducerStateCorruptSnapshotFallsBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idem-0")
	cfg := map[string]string{"segment.bytes": "300"}
	l := openTestLog(t, dir, testLogOpts{cfg: cfg})
	ts := time.Now().UnixMilli()
	for i := int32(0); i < 12; i++ {
		mustAppendIdem(t, l, 1, 0, i*2, 2, ts)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	if err := os.WriteFile(ProducerSnapshotFileName(dir, leo), []byte("garbage!!!!!!"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, testLogOpts{cfg: cfg, clean: true})
	defer l.Close()
	if _, err := os.Stat(ProducerSnapshotFileName(dir, leo)); err == nil {
		t.Fatal("corrupt snapshot kept")
	}
	if l.ProducerStateReplayedBatches() == 0 {
		t.Fatal("nothing replayed after dropping the corrupt snapshot")
	}
	if p, _ := producerState(t, l, 1); p.LastSequence != 23 {
		t.Fatalf("state %+v", p)
	}
}

func TestDumpProducerSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000010.snapshot")
	data := encodeProducerSnapshot([]*producerStateEntry{{producerID: 7, epoch: 1,
		batches:       []batchMetadata{{lastSeq: 9, lastOffset: 9, offsetDelta: 4, timestamp: 1700000000000}},
		lastTimestamp: 1700000000000, coordinatorEpoch: -1, currentTxnFirstOffset: -1}})
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := DumpProducerSnapshot(&out, path); err != nil {
		t.Fatal(err)
	}
	want := "producerId: 7 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 1700000000000 " +
		"firstSequence: 5 lastSequence: 9 lastOffset: 9 offsetDelta: 4 timestamp: 1700000000000\n"
	if out.String() != want {
		t.Fatalf("got  %q\nwant %q", out.String(), want)
	}
}
