package logstore

// inspect.go — read-only views of a log's files for the broker's internals view: a page of a
// segment's offset index (kafka.log.OffsetIndex) and time index (kafka.log.TimeIndex), its
// aborted transactions (kafka.log.TransactionIndex), the first batch's timestamp, and the
// entries of a producer-state snapshot (kafka.log.ProducerStateManager). Nothing here
// writes, maps or creates a file: entries are copied from an index's existing mapping or
// read from a read-only descriptor, so looking never changes what the log does.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// MaxInspectEntries bounds one page of index entries.
const MaxInspectEntries = 10000

// OffsetIndexEntry is one .index entry: an absolute offset and its .log position.
type OffsetIndexEntry struct{ Offset, Position int64 }

// TimeIndexEntry is one .timeindex entry: a timestamp and the absolute offset it maps to.
type TimeIndexEntry struct{ Timestamp, Offset int64 }

// SegmentInspection is one segment's index files as read for a page of entries.
type SegmentInspection struct {
	BaseOffset int64
	// Entries held (Kafka's AbstractIndex.entries) and slots (maxEntries; an active
	// segment's indexes are preallocated to segment.index.bytes).
	OffsetIndexEntries, OffsetIndexSlots int64
	TimeIndexEntries, TimeIndexSlots     int64
	Offsets                              []OffsetIndexEntry
	Times                                []TimeIndexEntry
	// FirstBatchTimestamp is the first batch's base timestamp (its first record's), -1 when
	// the segment is empty or the header cannot be read.
	FirstBatchTimestamp int64
	TxnIndexExists      bool // the .txnindex file is on disk (Kafka creates it on the first abort)
	AbortedTxns         []AbortedTxn
}

// InspectSegment reads the segment whose base offset is base: entries [from, from+n) of
// each index (n ≤ MaxInspectEntries; fewer past the end) and its aborted transactions.
// ok is false when the log has no such segment.
func (l *Log) InspectSegment(base, from int64, n int) (si SegmentInspection, ok bool, err error) {
	var s *Segment
	for _, c := range l.segments() {
		if c.baseOffset == base {
			s = c
			break
		}
	}
	if s == nil {
		return si, false, nil
	}
	n = min(max(n, 0), MaxInspectEntries)
	si = SegmentInspection{BaseOffset: base, FirstBatchTimestamp: -1,
		OffsetIndexEntries: s.offsetIdx.entries.Load(), OffsetIndexSlots: s.offsetIdx.maxEntries.Load(),
		TimeIndexEntries: s.timeIdx.entries.Load(), TimeIndexSlots: s.timeIdx.maxEntries.Load(),
		Offsets: []OffsetIndexEntry{}, Times: []TimeIndexEntry{}}
	raw, err := s.offsetIdx.readRange(from, int64(n))
	if err != nil {
		return si, true, err
	}
	for p := raw; len(p) >= offsetIndexEntrySize; p = p[offsetIndexEntrySize:] {
		si.Offsets = append(si.Offsets, OffsetIndexEntry{base + int64(int32(binary.BigEndian.Uint32(p))), int64(int32(binary.BigEndian.Uint32(p[4:])))})
	}
	if raw, err = s.timeIdx.readRange(from, int64(n)); err != nil {
		return si, true, err
	}
	for p := raw; len(p) >= timeIndexEntrySize; p = p[timeIndexEntrySize:] {
		si.Times = append(si.Times, TimeIndexEntry{int64(binary.BigEndian.Uint64(p)), base + int64(int32(binary.BigEndian.Uint32(p[8:])))})
	}
	var hdr [recordbatch.HeaderSize]byte
	if b, err := s.readHeader(&hdr, 0, s.size.Load()); err == nil {
		si.FirstBatchTimestamp = b.BaseTimestamp()
	}
	si.AbortedTxns = append([]AbortedTxn{}, s.txnIdx.list()...)
	if _, err := s.fs.Stat(s.txnPath()); err == nil {
		si.TxnIndexExists = true
	}
	return si, true, nil
}

// readRange copies entries [from, from+n) of the index, clamped to the entries held: from
// the mapping when one exists, else with a positional read of a read-only descriptor (a
// look must not map an inactive segment's index).
func (idx *index) readRange(from, n int64) ([]byte, error) {
	total := idx.entries.Load()
	if from < 0 || from >= total || n <= 0 {
		return nil, nil
	}
	n = min(n, total-from)
	es := int64(idx.entrySize)
	buf := make([]byte, n*es)
	idx.mu.RLock()
	if idx.mu.loaded {
		defer idx.mu.RUnlock()
		if int64(len(idx.mu.data)) < (from+n)*es {
			return nil, fmt.Errorf("index %s is closed", idx.path)
		}
		copy(buf, idx.mu.data[from*es:])
		return buf, nil
	}
	idx.mu.RUnlock()
	f, err := idx.fs.OpenFile(idx.path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("read index %s: %w", idx.path, err)
	}
	defer f.Close()
	if m, err := f.ReadAt(buf, from*es); int64(m) != n*es {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read index %s: %w", idx.path, err)
	}
	return buf, nil
}

// ReadProducerSnapshot decodes the producer-state snapshot <offset>.snapshot of the log
// (ProducerStateManager.readSnapshot), without loading it into the partition's state.
func (l *Log) ReadProducerSnapshot(offset int64) ([]ProducerStateInfo, error) {
	buf, err := readFileFS(l.fs, ProducerSnapshotFileName(l.Dir(), offset))
	if err != nil {
		return nil, err
	}
	entries, err := decodeProducerSnapshot(buf)
	if err != nil {
		return nil, err
	}
	out := make([]ProducerStateInfo, 0, len(entries))
	for _, e := range entries {
		pi := ProducerStateInfo{ProducerID: e.producerID, ProducerEpoch: e.epoch, LastSequence: e.lastSeq(), LastOffset: -1,
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnFirstOffset: e.currentTxnFirstOffset,
			RetainedBatches: len(e.batches)}
		if len(e.batches) > 0 {
			pi.LastOffset = e.batches[len(e.batches)-1].lastOffset
		}
		out = append(out, pi)
	}
	return out, nil
}
