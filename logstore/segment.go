package logstore

// Segment mirrors Kafka's LogSegment: one .log file of record batches plus its .index,
// .timeindex and (created when first needed) .txnindex, all named by the 20-digit base
// offset. Producer .snapshot files share the naming (producer_state.go).
//
// Concurrency: the owning Log's appender mutates a segment under Log.mu; readers use the
// published size (atomic) and positional reads only.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// File suffixes (LogFileUtils).
const (
	LogFileSuffix       = ".log"
	IndexFileSuffix     = ".index"
	TimeIndexFileSuffix = ".timeindex"
	TxnIndexFileSuffix  = ".txnindex"
	SnapshotFileSuffix  = ".snapshot"
	DeletedFileSuffix   = ".deleted"
	CleanedFileSuffix   = ".cleaned"
	SwapFileSuffix      = ".swap"
)

// FilenamePrefixFromOffset is the 20-digit zero-padded base offset (LogFileUtils.filenamePrefixFromOffset).
func FilenamePrefixFromOffset(offset int64) string { return fmt.Sprintf("%020d", offset) }

// LogFileName etc. return a segment's file paths in dir.
func LogFileName(dir string, base int64) string {
	return filepath.Join(dir, FilenamePrefixFromOffset(base)+LogFileSuffix)
}
func IndexFileName(dir string, base int64) string {
	return filepath.Join(dir, FilenamePrefixFromOffset(base)+IndexFileSuffix)
}
func TimeIndexFileName(dir string, base int64) string {
	return filepath.Join(dir, FilenamePrefixFromOffset(base)+TimeIndexFileSuffix)
}
func TxnIndexFileName(dir string, base int64) string {
	return filepath.Join(dir, FilenamePrefixFromOffset(base)+TxnIndexFileSuffix)
}

// OffsetFromFileName parses the base offset of a segment file name (any suffix).
func OffsetFromFileName(name string) (int64, bool) {
	name = filepath.Base(name)
	i := strings.IndexByte(name, '.')
	if i != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[:i], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// Segment is one log segment.
type Segment struct {
	fs FS
	// loc is the folder and file suffix ("" normally, ".cleaned" for cleaner output): both
	// change by rename (RenameDir, changeSuffix) while readers such as Log.Segments build
	// paths from a snapshot of the segment list without the log's lock, so it is swapped whole.
	loc        atomic.Pointer[segmentLoc]
	baseOffset int64
	log        File
	osFile     *os.File
	offsetIdx  *OffsetIndex
	timeIdx    *TimeIndex
	txnIdx     *txnIndex

	// size is the published length of valid data in .log; readers never look past it.
	size atomic.Int64
	// Updated by the appender; read atomically for SegmentInfo.
	maxTimestampSoFar         atomic.Int64
	offsetOfMaxTimestampSoFar atomic.Int64
	rollingBasedTimestamp     atomic.Int64 // -1: none (empty segment)
	created                   atomic.Int64 // unix ms, for segment.ms on segments without timestamps
	lastModified              atomic.Int64 // unix ms of the last append

	// Appender-only.
	// rebuildTxnIndex: recovery reset the .txnindex; the producer-state replay at load
	// writes its entries again.
	rebuildTxnIndex          bool
	recoveredAbortMarker     bool // recoverSegment found an ABORT marker
	bytesSinceLastIndexEntry int64
	indexesSized             bool // indexes preallocated for appends
	rollJitterMs             int64
	indexIntervalBytes       int64
}

// BaseOffset is the first offset the segment may hold.
func (s *Segment) BaseOffset() int64 { return s.baseOffset }

// Size is the published size of the .log file.
func (s *Segment) Size() int64 { return s.size.Load() }

// OffsetIndex and TimeIndex expose the indexes (tests, dump-log).
func (s *Segment) OffsetIndex() *OffsetIndex { return s.offsetIdx }
func (s *Segment) TimeIndex() *TimeIndex     { return s.timeIdx }

// File is the open .log file, for positional reads.
func (s *Segment) File() *os.File { return s.osFile }

// segmentLoc is where a segment's files are: its folder and their suffix.
type segmentLoc struct{ dir, suffix string }

func (s *Segment) logPath() string {
	l := s.loc.Load()
	return LogFileName(l.dir, s.baseOffset) + l.suffix
}
func (s *Segment) indexPath() string {
	l := s.loc.Load()
	return IndexFileName(l.dir, s.baseOffset) + l.suffix
}
func (s *Segment) timePath() string {
	l := s.loc.Load()
	return TimeIndexFileName(l.dir, s.baseOffset) + l.suffix
}
func (s *Segment) txnPath() string {
	l := s.loc.Load()
	return TxnIndexFileName(l.dir, s.baseOffset) + l.suffix
}

type segmentOptions struct {
	fs            FS
	dir           string
	baseOffset    int64
	suffix        string
	indexBytes    int32 // >0: preallocate indexes (active segment)
	indexInterval int32
	rollJitterMs  int64
	now           time.Time
	create        bool // O_EXCL-free create for new segments
}

// openSegment opens (or creates) a segment's files. Its size is the .log length; call
// recover to validate it, or loadFromIndexes when it is known good.
func openSegment(o segmentOptions) (*Segment, error) {
	s := &Segment{fs: o.fs, baseOffset: o.baseOffset,
		rollJitterMs: o.rollJitterMs, indexIntervalBytes: int64(o.indexInterval), indexesSized: o.indexBytes > 0}
	s.loc.Store(&segmentLoc{dir: o.dir, suffix: o.suffix})
	flag := os.O_RDWR
	if o.create {
		flag |= os.O_CREATE
	}
	f, err := o.fs.OpenFile(s.logPath(), flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open segment %s: %w", s.logPath(), err)
	}
	s.log, s.osFile = f, f.OS()
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat segment %s: %w", s.logPath(), err)
	}
	s.size.Store(st.Size())
	s.lastModified.Store(st.ModTime().UnixMilli())
	s.created.Store(o.now.UnixMilli())
	s.maxTimestampSoFar.Store(-1)
	s.offsetOfMaxTimestampSoFar.Store(o.baseOffset)
	s.rollingBasedTimestamp.Store(-2) // unknown until loaded
	if s.offsetIdx, err = openOffsetIndex(o.fs, s.indexPath(), o.baseOffset, o.indexBytes); err != nil {
		f.Close()
		return nil, err
	}
	if s.timeIdx, err = openTimeIndex(o.fs, s.timePath(), o.baseOffset, o.indexBytes); err != nil {
		f.Close()
		s.offsetIdx.unmapOnly()
		return nil, err
	}
	if s.txnIdx, err = openTxnIndex(o.fs, s.txnPath(), o.baseOffset, !o.create); err != nil {
		if errors.Is(err, errCorruptTxnIndex) && s.txnIdx != nil {
			// Rebuilt by the load's recovery of this segment.
			s.rebuildTxnIndex = true
		} else {
			f.Close()
			s.offsetIdx.unmapOnly()
			s.timeIdx.unmapOnly()
			if s.txnIdx != nil {
				_ = s.txnIdx.close()
			}
			return nil, err
		}
	}
	if st.Size() == 0 {
		s.rollingBasedTimestamp.Store(-1)
	}
	return s, nil
}

// readHeader reads the batch header at pos into buf (positional). It returns io.EOF at the
// end and recordbatch.ErrShort on a partial header.
func (s *Segment) readHeader(buf *[recordbatch.HeaderSize]byte, pos, end int64) (recordbatch.Batch, error) {
	if pos >= end {
		return nil, io.EOF
	}
	if end-pos < recordbatch.HeaderSize {
		return nil, recordbatch.ErrShort
	}
	if _, err := s.osFile.ReadAt(buf[:], pos); err != nil {
		return nil, err
	}
	return recordbatch.Batch(buf[:]), nil
}

// batchPosition is a batch found by a scan.
type batchPosition struct {
	pos, size        int64
	baseOffset, last int64
	maxTimestamp     int64
}

// translateOffset finds the first batch whose last offset >= offset, scanning from the index
// entry at or below it, bounded by end (Kafka's LogSegment.translateOffset +
// FileRecords.searchForOffsetWithSize). ok is false if no such batch is before end.
func (s *Segment) translateOffset(offset, end int64) (bp batchPosition, ok bool, err error) {
	_, pos := s.offsetIdx.Lookup(offset)
	var hdr [recordbatch.HeaderSize]byte
	for pos < end {
		if end-pos < recordbatch.HeaderSize {
			return bp, false, nil
		}
		// One pread per batch: the header holds the length and lastOffsetDelta.
		if _, err := s.osFile.ReadAt(hdr[:], pos); err != nil {
			return bp, false, err
		}
		size := int64(int32(binary.BigEndian.Uint32(hdr[8:]))) + recordbatch.LogOverhead
		if size < recordbatch.HeaderSize || pos+size > end {
			return bp, false, nil
		}
		b := recordbatch.Batch(hdr[:])
		if b.LastOffset() >= offset {
			return batchPosition{pos: pos, size: size, baseOffset: b.BaseOffset(), last: b.LastOffset(),
				maxTimestamp: b.MaxTimestamp()}, true, nil
		}
		pos += size
	}
	return bp, false, nil
}

// readNextOffset is the offset after the last batch (base offset if empty): the last index
// entry then a scan (LogSegment.readNextOffset).
func (s *Segment) readNextOffset() (int64, error) {
	end := s.size.Load()
	pos := s.lastIndexedPosition()
	next := s.baseOffset
	var hdr [recordbatch.HeaderSize]byte
	for pos < end {
		b, err := s.readHeader(&hdr, pos, end)
		if err != nil {
			if errors.Is(err, recordbatch.ErrShort) {
				break
			}
			return 0, err
		}
		next = b.NextOffset()
		pos += int64(b.BatchLength()) + recordbatch.LogOverhead
	}
	return next, nil
}

// loadTimestamps fills maxTimestampSoFar from the time index's last entry and the batches
// after the last index entry, rollingBasedTimestamp from the first batch (Kafka loads these
// lazily), and returns the segment's next offset from the same scan.
func (s *Segment) loadTimestamps() (int64, error) {
	if ts, off := s.timeIdx.LastEntry(); ts >= 0 {
		s.maxTimestampSoFar.Store(ts)
		s.offsetOfMaxTimestampSoFar.Store(off)
	}
	end := s.size.Load()
	next := s.baseOffset
	s.rollingBasedTimestamp.Store(-1)
	if end == 0 {
		return next, nil
	}
	var hdr [recordbatch.HeaderSize]byte
	// Batches past the last offset-index entry are the only ones the time index may not
	// cover: both get entries at the same moments (LogSegment.loadLargestTimestamp).
	pos := s.lastIndexedPosition()
	if pos > 0 {
		b, err := s.readHeader(&hdr, 0, end)
		if err != nil {
			if errors.Is(err, recordbatch.ErrShort) || err == io.EOF {
				return next, nil
			}
			return 0, err
		}
		s.rollingBasedTimestamp.Store(b.MaxTimestamp())
	}
	for pos < end {
		b, err := s.readHeader(&hdr, pos, end)
		if err != nil {
			if errors.Is(err, recordbatch.ErrShort) || err == io.EOF {
				break
			}
			return 0, err
		}
		if pos+int64(b.BatchLength())+recordbatch.LogOverhead > end {
			break
		}
		if pos == 0 {
			s.rollingBasedTimestamp.Store(b.MaxTimestamp())
		}
		if ts := b.MaxTimestamp(); ts > s.maxTimestampSoFar.Load() {
			s.maxTimestampSoFar.Store(ts)
			s.offsetOfMaxTimestampSoFar.Store(b.LastOffset())
		}
		next = b.NextOffset()
		pos += int64(b.BatchLength()) + recordbatch.LogOverhead
	}
	return next, nil
}

// lastIndexedPosition is the position of the last offset-index entry (0 if none), read
// without mapping the index.
func (s *Segment) lastIndexedPosition() int64 {
	n := s.offsetIdx.Entries()
	if n == 0 {
		return 0
	}
	_, pos, err := s.offsetIdx.Entry(n - 1)
	if err != nil || pos > s.size.Load() {
		return 0
	}
	return pos
}

// canConvertToRelativeOffset: offset - base must fit an int32 and be >= 0.
func (s *Segment) canConvertToRelativeOffset(offset int64) bool {
	rel := offset - s.baseOffset
	return rel >= 0 && rel <= math.MaxInt32
}

// append writes records (one or more batches, offsets assigned) at the end and updates the
// indexes (LogSegment.append). The new size is not published; the caller publishes after
// the whole append succeeded. It returns the position written at.
func (s *Segment) append(largestOffset, largestTimestamp, offsetOfMaxTimestamp int64, records []byte, pos int64) error {
	if len(records) == 0 {
		return nil
	}
	if !s.canConvertToRelativeOffset(largestOffset) {
		return fmt.Errorf("segment %d: offset %d cannot be stored relative to the base", s.baseOffset, largestOffset)
	}
	if _, err := s.log.WriteAt(records, pos); err != nil {
		return fmt.Errorf("%w: write %s: %v", ErrKafkaStorage, s.logPath(), err)
	}
	return nil
}

// afterAppend updates in-memory state and indexes once the bytes are durable enough to publish.
func (s *Segment) afterAppend(largestOffset, largestTimestamp, offsetOfMaxTimestamp int64, n, pos int64, now time.Time) {
	if pos == 0 {
		s.rollingBasedTimestamp.Store(largestTimestamp)
	}
	if largestTimestamp > s.maxTimestampSoFar.Load() {
		s.maxTimestampSoFar.Store(largestTimestamp)
		s.offsetOfMaxTimestampSoFar.Store(offsetOfMaxTimestamp)
	}
	if s.bytesSinceLastIndexEntry > s.indexIntervalBytes {
		// Both indexes have room: the log rolls before an append when either is full.
		_ = s.offsetIdx.Append(largestOffset, pos)
		_ = s.timeIdx.MaybeAppend(s.maxTimestampSoFar.Load(), s.offsetOfMaxTimestampSoFar.Load(), false)
		s.bytesSinceLastIndexEntry = 0
	}
	s.bytesSinceLastIndexEntry += n
	s.lastModified.Store(now.UnixMilli())
	s.size.Store(pos + n)
}

// shouldRoll is LogSegment.shouldRoll.
func (s *Segment) shouldRoll(cfg *LogConfig, messagesSize int64, maxTimestampInMessages, maxOffsetInMessages int64, now time.Time) bool {
	size := s.size.Load()
	reachedRollMs := false
	if size > 0 {
		var waited int64
		if rbt := s.rollingBasedTimestamp.Load(); rbt >= 0 {
			waited = maxTimestampInMessages - rbt
		} else {
			waited = now.UnixMilli() - s.created.Load()
		}
		reachedRollMs = waited > cfg.SegmentMs-s.rollJitterMs
	}
	return size > cfg.SegmentBytes-messagesSize ||
		(size > 0 && reachedRollMs) ||
		s.offsetIdx.isFull() || s.timeIdx.isFull() ||
		!s.canConvertToRelativeOffset(maxOffsetInMessages)
}

// sizeIndexes preallocates both indexes to maxBytes before the segment takes appends.
func (s *Segment) sizeIndexes(maxBytes int32) error {
	if err := s.offsetIdx.resize(int64(maxBytes)); err != nil {
		return err
	}
	if err := s.timeIdx.resize(int64(maxBytes)); err != nil {
		return err
	}
	s.indexesSized = true
	return nil
}

// onBecomeInactive adds the final time index entry and trims the indexes (Kafka: at roll).
func (s *Segment) onBecomeInactive() error {
	s.indexesSized = false
	_ = s.timeIdx.MaybeAppend(s.maxTimestampSoFar.Load(), s.offsetOfMaxTimestampSoFar.Load(), true)
	if err := s.offsetIdx.trimToValidSize(); err != nil {
		return err
	}
	return s.timeIdx.trimToValidSize()
}

// flush fsyncs the .log and the indexes.
func (s *Segment) flush() error { return timeFlush(s.flushFiles) } // LogFlushStats (flush.go)

func (s *Segment) flushFiles() error {
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("%w: fsync %s: %v", ErrKafkaStorage, s.logPath(), err)
	}
	if err := s.offsetIdx.flush(); err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	if err := s.timeIdx.flush(); err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	return s.txnIdx.flush()
}

// truncateTo removes every batch with last offset >= offset (LogSegment.truncateTo); the
// segment becomes active again, so its indexes are resized to maxIndexBytes.
func (s *Segment) truncateTo(offset int64, maxIndexBytes int32) (int64, error) {
	bp, ok, err := s.translateOffset(offset, s.size.Load())
	if err != nil {
		return 0, err
	}
	s.offsetIdx.TruncateTo(offset)
	s.timeIdx.TruncateTo(offset)
	if err := s.txnIdx.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.sizeIndexes(maxIndexBytes); err != nil {
		return 0, err
	}
	if !ok {
		return 0, nil
	}
	// Truncating to offset keeps batches before the one containing offset; a batch spanning
	// offset goes entirely (Kafka truncates at the batch position too).
	old := s.size.Load()
	s.size.Store(bp.pos)
	if err := s.log.Truncate(bp.pos); err != nil {
		return 0, fmt.Errorf("%w: truncate %s: %v", ErrKafkaStorage, s.logPath(), err)
	}
	if bp.pos == 0 {
		s.created.Store(time.Now().UnixMilli())
		s.rollingBasedTimestamp.Store(-1)
	}
	s.bytesSinceLastIndexEntry = 0
	// Reload the max timestamp from what is left.
	s.maxTimestampSoFar.Store(-1)
	s.offsetOfMaxTimestampSoFar.Store(s.baseOffset)
	if _, err := s.loadTimestamps(); err != nil {
		return 0, err
	}
	return old - bp.pos, nil
}

// info is the SegmentInfo snapshot; nextOffset is filled by the caller.
func (s *Segment) info() SegmentInfo {
	largest := s.maxTimestampSoFar.Load()
	if largest < 0 {
		largest = s.lastModified.Load()
	}
	rbt := s.rollingBasedTimestamp.Load()
	if rbt < -1 {
		rbt = -1
	}
	return SegmentInfo{
		BaseOffset: s.baseOffset, Size: s.size.Load(), LargestTimestamp: largest,
		FirstBatchTimestamp: rbt, LastModified: time.UnixMilli(s.lastModified.Load()),
		LogFile: s.logPath(),
	}
}

// close adds the final time index entry (LogSegment.close), trims the indexes and closes the .log.
func (s *Segment) close() error {
	if ts := s.maxTimestampSoFar.Load(); ts >= 0 {
		_ = s.timeIdx.MaybeAppend(ts, s.offsetOfMaxTimestampSoFar.Load(), true)
	}
	err1 := s.offsetIdx.close()
	err2 := s.timeIdx.close()
	err3 := s.log.Close()
	err4 := s.txnIdx.close()
	return errors.Join(err1, err2, err3, err4)
}

// closeNoTrim closes without touching index lengths (before delete/rename).
func (s *Segment) closeNoTrim() error {
	s.offsetIdx.unmapOnly()
	s.timeIdx.unmapOnly()
	_ = s.txnIdx.close()
	return s.log.Close()
}

// changeSuffix renames the segment's files from the current suffix to newSuffix
// (LogSegment.changeFileSuffixes). The .log stays open (rename keeps the fd valid).
func (s *Segment) changeSuffix(newSuffix string) error {
	oldLog, oldIdx, oldTime := s.logPath(), s.indexPath(), s.timePath()
	s.offsetIdx.unmapOnly()
	s.timeIdx.unmapOnly()
	s.loc.Store(&segmentLoc{dir: s.loc.Load().dir, suffix: newSuffix})
	for _, p := range [][2]string{{oldLog, s.logPath()}, {oldIdx, s.indexPath()}, {oldTime, s.timePath()}} {
		if err := s.fs.Rename(p[0], p[1]); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("%w: rename %s: %v", ErrKafkaStorage, p[0], err)
		}
	}
	s.offsetIdx.path = s.indexPath()
	s.timeIdx.path = s.timePath()
	return s.txnIdx.rename(s.txnPath())
}

// deleteFiles closes and removes the segment's files now.
func (s *Segment) deleteFiles() error {
	_ = s.closeNoTrim()
	var errs []error
	for _, p := range []string{s.logPath(), s.indexPath(), s.timePath(), s.txnPath()} {
		if err := s.fs.Remove(p); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
