package logstore

// Reads: Kafka's LocalLog.read / LogSegment.read and fetchOffsetByTimestamp. Readers take no
// log lock: they load the segment list, the LEO and each segment's size atomically and read
// with positional I/O only.

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// FileRegion is a byte range of an open segment file, for sendfile or pread. Pos is an
// explicit offset: never use the file's shared offset.
type FileRegion struct {
	File     *os.File
	Pos, Len int64
}

// ReadInfo is the result of Read.
type ReadInfo struct {
	Regions []FileRegion
	Size    int64
	// FirstBatchOffset is the base offset of the first batch returned (may be below the
	// requested offset), -1 if nothing.
	FirstBatchOffset             int64
	LogStartOffset, LogEndOffset int64
	// AbortedTxnUpperBound bounds the aborted-transaction lookup of a read_committed fetch
	// of this data (LocalLog.addAbortedTransactions): the offset of the first offset-index
	// entry of the segment read at or past the end of the returned bytes, else the next
	// segment's base offset, else the log end offset. No aborted transaction starting at or
	// after it can have data in the returned bytes. -1 when nothing was read.
	AbortedTxnUpperBound int64
}

// Bytes reads the regions into one slice with pread.
func (r ReadInfo) Bytes() ([]byte, error) {
	out := make([]byte, r.Size)
	n := 0
	for _, reg := range r.Regions {
		m, err := reg.File.ReadAt(out[n:n+int(reg.Len)], reg.Pos)
		n += m
		if err != nil {
			if err == io.EOF {
				// A concurrent truncation shortened the file: return what was there.
				return out[:n], nil
			}
			return out[:n], fmt.Errorf("read %s: %w", reg.File.Name(), err)
		}
	}
	return out, nil
}

// WriteTo copies the regions to w through positional reads (the portable path; the broker
// sends the regions with sendfile itself where it can).
func (r ReadInfo) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for _, reg := range r.Regions {
		n, err := io.Copy(w, io.NewSectionReader(reg.File, reg.Pos, reg.Len))
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// floorSegment returns the index of the segment with the greatest base offset <= offset.
func floorSegment(segs []*Segment, offset int64) int {
	lo, hi := 0, len(segs)-1
	if offset < segs[0].baseOffset {
		return -1
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if segs[mid].baseOffset <= offset {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// Read returns up to maxBytes of whole batches starting at the batch that holds offset and
// ending before the batch that holds maxOffset (exclusive bound: HW, LSO or LEO). With
// minOneMessage the first batch is returned whole even if larger than maxBytes (KIP-74);
// otherwise the last batch may be cut. offset outside [LogStartOffset, LogEndOffset] is
// ErrOffsetOutOfRange.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneMessage bool) (ReadInfo, error) {
	leo := l.logEndOffset.Load()
	segs := l.segments()
	start := l.logStartOffset.Load()
	info := ReadInfo{LogStartOffset: start, LogEndOffset: leo, FirstBatchOffset: -1, AbortedTxnUpperBound: -1}
	if l.closed.Load() {
		return info, ErrClosed
	}
	if offset < start || offset > leo {
		return info, fmt.Errorf("%w: offset %d not in [%d, %d] for %s", ErrOffsetOutOfRange, offset, start, leo, l.tp)
	}
	if maxOffset > leo {
		maxOffset = leo
	}
	if offset >= maxOffset || maxBytes < 0 {
		return info, nil
	}
	i := floorSegment(segs, offset)
	if i < 0 {
		i = 0
	}
	for ; i < len(segs); i++ {
		seg := segs[i]
		end := seg.size.Load()
		bp, ok, err := seg.translateOffset(offset, end)
		if err != nil {
			return info, l.readFailed(err, offset)
		}
		if !ok {
			continue // offset beyond this segment (a gap left by compaction or an empty active one)
		}
		// Upper bound: the position of the batch holding maxOffset, if it is in this segment.
		maxPos := end
		if maxOffset < leo {
			if mp, ok, err := seg.translateOffset(maxOffset, end); err != nil {
				return info, l.readFailed(err, maxOffset)
			} else if ok {
				maxPos = mp.pos
			}
		}
		if maxPos <= bp.pos {
			return info, nil
		}
		adjusted := int64(maxBytes)
		if minOneMessage && bp.size > adjusted {
			adjusted = bp.size
		}
		if adjusted == 0 {
			return info, nil
		}
		n := min(maxPos-bp.pos, adjusted)
		info.Regions = []FileRegion{{File: seg.osFile, Pos: bp.pos, Len: n}}
		info.Size = n
		info.FirstBatchOffset = bp.baseOffset
		if ub, ok := seg.offsetIdx.FetchUpperBoundOffset(bp.pos + n); ok {
			info.AbortedTxnUpperBound = ub
		} else if i+1 < len(segs) {
			info.AbortedTxnUpperBound = segs[i+1].baseOffset
		} else {
			info.AbortedTxnUpperBound = leo
		}
		return info, nil
	}
	return info, nil
}

// readFailed reports a read I/O error like a write one (Kafka's maybeHandleIOException):
// the manager takes the dir offline. Readers hold no lock, so the hook runs directly. A
// short read of a concurrently truncated file, or a segment closed after deletion, is not.
func (l *Log) readFailed(err error, offset int64) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, os.ErrClosed) {
		// Truncated, deleted or closed under the reader: the fetch fails, the dir is fine.
		return fmt.Errorf("read %s at %d: %w", l.tp, offset, err)
	}
	err = fmt.Errorf("%w: read %s at %d: %v", ErrKafkaStorage, l.tp, offset, err)
	if l.onIOError != nil {
		l.onIOError(err)
	}
	return err
}

// OffsetForTimestamp finds the first offset whose record timestamp >= ts (ListOffsets by
// timestamp; ts >= 0). found is false if no record has such a timestamp.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, leaderEpoch int32, found bool, err error) {
	segs := l.segments()
	start := l.logStartOffset.Load()
	// The first segment whose largest timestamp >= ts (UnifiedLog.fetchOffsetByTimestamp).
	for _, seg := range segs {
		if seg.maxTimestampSoFar.Load() < ts {
			continue
		}
		off, t, ep, ok, err := seg.findOffsetByTimestamp(ts, max(start, seg.baseOffset))
		if err != nil {
			return 0, 0, -1, false, fmt.Errorf("offset for timestamp %s: %w", l.tp, err)
		}
		if ok {
			return off, t, ep, true, nil
		}
	}
	return -1, -1, -1, false, nil
}

// findOffsetByTimestamp is LogSegment.findOffsetByTimestamp: time index lookup, then scan
// batches and records for the first record with timestamp >= ts and offset >= startingOffset.
// The epoch is the holding batch's partitionLeaderEpoch (-1 if none), as Kafka reports it.
func (s *Segment) findOffsetByTimestamp(ts, startingOffset int64) (int64, int64, int32, bool, error) {
	_, idxOff := s.timeIdx.Lookup(ts)
	_, pos := s.offsetIdx.Lookup(max(idxOff, startingOffset))
	end := s.size.Load()
	var buf []byte
	for pos < end {
		b, err := readBatchAt(s.osFile, pos, end, &buf)
		if err != nil {
			return 0, 0, -1, false, nil // a torn tail cannot hold the answer
		}
		pos += int64(len(b))
		if b.MaxTimestamp() < ts || b.LastOffset() < startingOffset {
			continue
		}
		var off, t int64
		found := false
		err = b.ForEachRecord(false, func(r *recordbatch.Record) error {
			if found {
				return nil
			}
			rts := b.BaseTimestamp() + r.TimestampDelta
			if b.LogAppendTime() {
				rts = b.MaxTimestamp()
			}
			ro := b.BaseOffset() + int64(r.OffsetDelta)
			if rts >= ts && ro >= startingOffset {
				off, t, found = ro, rts, true
			}
			return nil
		})
		if err != nil {
			return 0, 0, -1, false, err
		}
		if found {
			return off, t, max(b.PartitionLeaderEpoch(), -1), true, nil
		}
	}
	return 0, 0, -1, false, nil
}

// MaxTimestampOffset answers ListOffsets MAX_TIMESTAMP (KIP-734): the timestamp, offset and
// batch leader epoch (-1 if none) of the first record holding the largest timestamp; found
// is false for an empty log. Segments track only the last offset of the batch with their
// largest timestamp (as Kafka's shallowOffsetOfMaxTimestamp), so the batch is found from
// there and its records are read, as UnifiedLog.fetchOffsetByTimestamp does since the fix
// of KAFKA-16310 (Kafka 3.7.0 answered the batch's last offset).
func (l *Log) MaxTimestampOffset() (ts, offset int64, leaderEpoch int32, found bool, err error) {
	var seg *Segment
	for _, s := range l.segments() {
		if seg == nil || s.maxTimestampSoFar.Load() > seg.maxTimestampSoFar.Load() {
			seg = s // the first of equals, as Scala's maxBy
		}
	}
	if seg == nil {
		return -1, -1, -1, false, nil
	}
	ts, offset, leaderEpoch, found, err = seg.findMaxTimestampRecord()
	if err != nil {
		return -1, -1, -1, false, fmt.Errorf("max timestamp of %s: %w", l.tp, err)
	}
	return ts, offset, leaderEpoch, found, nil
}

// findMaxTimestampRecord scans from the offset-index entry of the segment's
// offsetOfMaxTimestampSoFar for the first batch whose max timestamp is the segment's, then
// returns its first record with that timestamp (RecordBatch.offsetOfMaxTimestamp). Not
// found if that batch holds no such record.
func (s *Segment) findMaxTimestampRecord() (int64, int64, int32, bool, error) {
	// Appends store the timestamp, then its offset, then the size: read them the other way
	// round so the size covers the batch and the offset is at or before it.
	shallow := s.offsetOfMaxTimestampSoFar.Load()
	maxTs := s.maxTimestampSoFar.Load()
	end := s.size.Load()
	_, pos := s.offsetIdx.Lookup(shallow)
	var hdr [recordbatch.HeaderSize]byte
	for pos < end {
		h, err := s.readHeader(&hdr, pos, end)
		if err != nil {
			if errors.Is(err, recordbatch.ErrShort) || errors.Is(err, io.EOF) {
				break
			}
			return 0, 0, -1, false, err
		}
		size := int64(h.BatchLength()) + recordbatch.LogOverhead
		if size < recordbatch.HeaderSize || pos+size > end {
			break // a torn tail cannot hold the answer
		}
		if h.MaxTimestamp() != maxTs {
			pos += size
			continue
		}
		var buf []byte
		b, err := readBatchAt(s.osFile, pos, end, &buf)
		if err != nil {
			return 0, 0, -1, false, err
		}
		var off int64
		found := false
		err = b.ForEachRecord(false, func(r *recordbatch.Record) error {
			rts := b.BaseTimestamp() + r.TimestampDelta
			if b.LogAppendTime() {
				rts = b.MaxTimestamp()
			}
			if !found && rts == maxTs {
				off, found = b.BaseOffset()+int64(r.OffsetDelta), true
			}
			return nil
		})
		if err != nil || !found {
			return 0, 0, -1, false, err
		}
		return maxTs, off, max(b.PartitionLeaderEpoch(), -1), true, nil
	}
	return 0, 0, -1, false, nil
}

// Segments returns a snapshot of the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	segs := l.segments()
	leo := l.logEndOffset.Load()
	out := make([]SegmentInfo, len(segs))
	for i, s := range segs {
		out[i] = s.info()
		if i+1 < len(segs) {
			out[i].NextOffset = segs[i+1].baseOffset
		} else {
			out[i].NextOffset = leo
			out[i].Active = true
		}
	}
	return out
}

// Size is the total size of all segments.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// ProducerIDCount is how many producers the partition's state holds (ProducerStateManager.producerIdCount).
func (l *Log) ProducerIDCount() int {
	l.mu.Lock()
	defer l.unlock()
	return len(l.producerState.producers)
}

// NumberOfSegments is the segment count (UnifiedLog.numberOfSegments), without copying them.
func (l *Log) NumberOfSegments() int { return len(l.segments()) }

// LatestEpoch is the newest leader epoch in the log's epoch cache.
func (l *Log) LatestEpoch() (int32, bool) { return l.epochs.LatestEpoch() }

// EndOffsetForEpoch answers OffsetsForLeaderEpoch (Kafka's endOffsetForEpoch).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return l.epochs.EndOffsetFor(epoch, l.logEndOffset.Load())
}

// EpochEntries returns the leader-epoch cache's entries.
func (l *Log) EpochEntries() []EpochEntry { return l.epochs.Entries() }
