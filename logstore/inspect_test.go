package logstore

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// TestInspectSegmentReadsWithoutMapping: a page of a closed segment's index entries equals
// the .index and .timeindex files, and looking does not map the index; the active segment's
// entries come from its mapping; a page past the end is empty and an unknown base is not ok.
func TestInspectSegmentReadsWithoutMapping(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic-0")
	clock := newStepClock(1_700_000_000_000)
	cfg := map[string]string{"segment.bytes": "5000", "index.interval.bytes": "0"}
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: cfg})
	for i := 0; i < 60; i++ {
		if _, err := l.AppendAsLeader(makeBatch(t, 3, 50, clock.Now().UnixMilli()+int64(10*i), recordbatch.None, false), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, testLogOpts{clock: clock, cfg: cfg, clean: true})
	defer l.Close()
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want rolls", len(segs))
	}
	first := l.segments()[0]
	si, ok, err := l.InspectSegment(0, 1, 5)
	if !ok || err != nil {
		t.Fatalf("InspectSegment(0): %v %v", ok, err)
	}
	raw, err := os.ReadFile(IndexFileName(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	if si.OffsetIndexEntries != int64(len(raw)/8) || si.OffsetIndexEntries < 6 || len(si.Offsets) != 5 {
		t.Fatalf("index: %d entries (file holds %d), page %v", si.OffsetIndexEntries, len(raw)/8, si.Offsets)
	}
	for i, e := range si.Offsets {
		rel, pos := binary.BigEndian.Uint32(raw[(i+1)*8:]), binary.BigEndian.Uint32(raw[(i+1)*8+4:])
		if e.Offset != int64(rel) || e.Position != int64(pos) {
			t.Errorf("entry %d = %+v, file has (%d, %d)", i+1, e, rel, pos)
		}
	}
	traw, err := os.ReadFile(TimeIndexFileName(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	if si.TimeIndexEntries != int64(len(traw)/12) || len(si.Times) != int(min(5, si.TimeIndexEntries-1)) ||
		si.Times[0].Timestamp != int64(binary.BigEndian.Uint64(traw[12:])) {
		t.Errorf("time index: %d entries (file holds %d), page %v", si.TimeIndexEntries, len(traw)/12, si.Times)
	}
	if si.FirstBatchTimestamp != 1_700_000_000_000 || si.TxnIndexExists || len(si.AbortedTxns) != 0 {
		t.Errorf("inspection %+v", si)
	}
	first.offsetIdx.mu.RLock()
	mapped := first.offsetIdx.mu.loaded || first.timeIdx.mu.loaded
	first.offsetIdx.mu.RUnlock()
	if mapped {
		t.Error("looking at a closed segment mapped its index")
	}

	active := segs[len(segs)-1]
	if _, err := l.AppendAsLeader(makeBatch(t, 1, 10, clock.Now().UnixMilli()+1000, recordbatch.None, false), 1); err != nil {
		t.Fatal(err)
	}
	if si, ok, err := l.InspectSegment(active.BaseOffset, 0, MaxInspectEntries+1); !ok || err != nil || si.OffsetIndexEntries < 1 ||
		int64(len(si.Offsets)) != si.OffsetIndexEntries || si.OffsetIndexSlots <= si.OffsetIndexEntries ||
		si.Offsets[len(si.Offsets)-1].Offset != l.LogEndOffset()-1 {
		t.Errorf("active segment: %v %v %+v (LEO %d)", ok, err, si, l.LogEndOffset())
	}
	if si, ok, err := l.InspectSegment(0, 1<<40, 10); !ok || err != nil || len(si.Offsets) != 0 || len(si.Times) != 0 {
		t.Errorf("page past the end: %v %v %+v", ok, err, si)
	}
	if _, ok, _ := l.InspectSegment(1, 0, 10); ok {
		t.Error("offset 1 is no segment's base offset")
	}
	if err := l.TakeProducerSnapshot(); err != nil {
		t.Fatal(err)
	}
	if ps, err := l.ReadProducerSnapshot(l.LogEndOffset()); err != nil || len(ps) != 0 {
		t.Errorf("snapshot of a log without producers: %v %v", ps, err)
	}
	if _, err := l.ReadProducerSnapshot(3); !os.IsNotExist(err) {
		t.Errorf("missing snapshot: %v", err)
	}
}
