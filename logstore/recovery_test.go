package logstore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// crashCopy copies a live log directory as a crash would leave it (preallocated indexes,
// no trimming), with the active .log cut to size cut.
func crashCopy(t testing.TB, src, dst string, activeBase int64, cut int64) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == filepath.Base(LogFileName(src, activeBase)) && cut >= 0 {
			data = data[:cut]
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// buildCrashSource appends batches over a few segments and returns the live log (open),
// the batches as stored, and the active segment base.
func buildCrashSource(t testing.TB, dir string, cfg map[string]string, n int) (*Log, []recordbatch.Batch) {
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: cfg})
	for i := 0; i < n; i++ {
		if _, err := l.AppendAsLeader(makeBatch(t, 1+i%3, 20+i%7, clock.Now().UnixMilli()+int64(i), recordbatch.None, false), int32(i/4)); err != nil {
			t.Fatal(err)
		}
	}
	return l, readAllBatches(t, l, 0)
}

var recoveryCfg = map[string]string{"segment.bytes": "1200", "segment.index.bytes": "4096", "index.interval.bytes": "100"}

func TestRecoveryTruncatedActiveSegmentEveryByte(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src-0")
	live, batches := buildCrashSource(t, src, recoveryCfg, 30)
	segs := live.Segments()
	active := segs[len(segs)-1]
	if active.Size == 0 || len(segs) < 3 {
		t.Fatalf("want several segments and a non-empty active one: %+v", segs)
	}
	// The last two batches of the active segment.
	var inActive []recordbatch.Batch
	for _, b := range batches {
		if b.BaseOffset() >= active.BaseOffset {
			inActive = append(inActive, b)
		}
	}
	if len(inActive) < 2 {
		t.Fatalf("active segment holds %d batches", len(inActive))
	}
	last2 := int64(len(inActive[len(inActive)-1]) + len(inActive[len(inActive)-2]))
	startCut := active.Size - last2
	for cut := startCut; cut <= active.Size; cut++ {
		dst := filepath.Join(root, "cut", "t-0")
		os.RemoveAll(filepath.Dir(dst))
		crashCopy(t, src, dst, active.BaseOffset, cut)
		// Recovery point at the active segment's base: only it is rescanned.
		l := openTestLog(t, dst, testLogOpts{cfg: recoveryCfg, rp: active.BaseOffset})
		// Expected: every batch that ends at or before the cut survives.
		want := active.BaseOffset
		pos := int64(0)
		for _, b := range inActive {
			if pos+int64(len(b)) > cut {
				break
			}
			pos += int64(len(b))
			want = b.NextOffset()
		}
		if l.LogEndOffset() != want {
			t.Fatalf("cut %d: LEO %d, want %d", cut, l.LogEndOffset(), want)
		}
		got := readAllBatches(t, l, 0)
		for i, b := range got {
			if !bytes.Equal(b, batches[i]) {
				t.Fatalf("cut %d: batch %d differs", cut, i)
			}
		}
		if st, _ := os.Stat(LogFileName(dst, active.BaseOffset)); st.Size() != pos {
			t.Fatalf("cut %d: file not truncated to %d (is %d)", cut, pos, st.Size())
		}
		// The log takes appends at the recovered end.
		info, err := l.AppendAsLeader(makeBatch(t, 2, 5, 1_700_000_000_000, recordbatch.None, false), 99)
		if err != nil || info.FirstOffset != want {
			t.Fatalf("cut %d: append after recovery %+v %v", cut, info, err)
		}
		if e, _ := l.LatestEpoch(); e != 99 {
			t.Fatalf("cut %d: latest epoch %d", cut, e)
		}
		l.Close()
	}
	live.Close()
}

func TestRecoveryCorruptMiddleBatch(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src-0")
	live, batches := buildCrashSource(t, src, recoveryCfg, 30)
	segs := live.Segments()
	if len(segs) < 4 {
		t.Fatalf("want 4+ segments, got %d", len(segs))
	}
	// Flip a byte inside (the CRC-covered part of) a middle batch of segment 1.
	target := segs[1]
	var pos int64
	var victim recordbatch.Batch
	var seen int
	for _, b := range batches {
		if b.BaseOffset() < target.BaseOffset || b.BaseOffset() >= target.NextOffset {
			continue
		}
		seen++
		if seen == 2 {
			victim = b
			break
		}
		pos += int64(len(b))
	}
	live.Close()
	dst := filepath.Join(root, "flip-0")
	crashCopy(t, src, dst, -1, -1)
	path := LogFileName(dst, target.BaseOffset)
	data, _ := os.ReadFile(path)
	data[pos+int64(len(victim))/2+recordbatch.HeaderSize/2] ^= 0x20
	os.WriteFile(path, data, 0o644)

	// Recovery point below segment 1: it is rescanned, the tail from the bad batch is
	// truncated and every later segment deleted.
	l := openTestLog(t, dst, testLogOpts{cfg: recoveryCfg, rp: target.BaseOffset})
	defer l.Close()
	if l.LogEndOffset() != victim.BaseOffset() {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), victim.BaseOffset())
	}
	if n := len(l.Segments()); n != 2 {
		t.Fatalf("%d segments remain", n)
	}
	for _, s := range segs[2:] {
		if _, err := os.Stat(LogFileName(dst, s.BaseOffset)); !os.IsNotExist(err) {
			t.Fatalf("segment %d not deleted", s.BaseOffset)
		}
	}
	got := readAllBatches(t, l, 0)
	for i, b := range got {
		if !bytes.Equal(b, batches[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
}

func TestRecoveryCleanShutdownSkipsScanAndRebuildsMissingIndex(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "idx-0")
	live, batches := buildCrashSource(t, dir, recoveryCfg, 30)
	segs := live.Segments()
	live.Close()
	// Remove one inactive segment's index and garble another's time index length.
	os.Remove(IndexFileName(dir, segs[1].BaseOffset))
	os.WriteFile(TimeIndexFileName(dir, segs[2].BaseOffset), []byte{1, 2, 3}, 0o644)
	l := openTestLog(t, dir, testLogOpts{cfg: recoveryCfg, clean: true})
	defer l.Close()
	if l.LogEndOffset() != batches[len(batches)-1].NextOffset() || l.RecoveryPoint() != l.LogEndOffset() {
		t.Fatalf("LEO %d RP %d", l.LogEndOffset(), l.RecoveryPoint())
	}
	if st, err := os.Stat(IndexFileName(dir, segs[1].BaseOffset)); err != nil || st.Size() == 0 {
		t.Fatalf("index not rebuilt: %v", err)
	}
	got := readAllBatches(t, l, 0)
	if len(got) != len(batches) {
		t.Fatalf("%d batches, want %d", len(got), len(batches))
	}
	for off := int64(0); off < l.LogEndOffset(); off++ {
		ri, err := l.Read(off, 1, l.LogEndOffset(), true)
		if err != nil || ri.Size == 0 || ri.FirstBatchOffset > off {
			t.Fatalf("read %d: %+v %v", off, ri, err)
		}
	}
}

func TestRecoveryInterruptedSwap(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "swap-0")
	live, _ := buildCrashSource(t, dir, recoveryCfg, 30)
	segs := live.Segments()
	live.Close()
	// Simulate a crash after .cleaned was renamed to .swap: a swap of segment 0 holding
	// only its first batch, while segments 0 and 1 are still in place.
	data, _ := os.ReadFile(LogFileName(dir, 0))
	first, _, err := recordbatch.Next(data)
	if err != nil {
		t.Fatal(err)
	}
	// The swap covers [0, segs[2].base): give it a batch ending right before segs[2].
	os.WriteFile(LogFileName(dir, 0)+SwapFileSuffix, first, 0o644)
	os.WriteFile(LogFileName(dir, 5)+CleanedFileSuffix, []byte("junk"), 0o644)
	l := openTestLog(t, dir, testLogOpts{cfg: recoveryCfg, clean: true})
	defer l.Close()
	got := l.Segments()
	if got[0].BaseOffset != 0 || got[0].Size != int64(len(first)) {
		t.Fatalf("swap not completed: %+v", got[0])
	}
	// Segment 0 was replaced; segment 1 is outside the swap's range [0, first.next) and stays.
	if len(got) != len(segs) {
		t.Fatalf("%d segments, want %d", len(got), len(segs))
	}
	if _, err := os.Stat(LogFileName(dir, 5) + CleanedFileSuffix); !os.IsNotExist(err) {
		t.Fatal(".cleaned file left behind")
	}
}
