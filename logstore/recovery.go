package logstore

// Opening and recovering a partition directory: Kafka's LogLoader.load and LogSegment.recover.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// OpenLog opens (creating if needed) the partition directory dir (<log dir>/<topic>-<partition>)
// and loads its segments. After an unclean shutdown every segment from the one holding the
// recovery point on is re-validated batch by batch; a torn or corrupt tail is truncated and
// later segments deleted. Missing or corrupt indexes are rebuilt.
func OpenLog(dir string, opts LogOpenOptions) (*Log, error) {
	tp, err := ParseTopicPartitionDir(dir)
	if err != nil {
		return nil, err
	}
	if opts.FS == nil {
		opts.FS = OSFS{}
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Log == nil {
		lg := logrus.New()
		lg.SetOutput(io.Discard)
		opts.Log = logrus.NewEntry(lg)
	}
	if opts.Config.values == nil && opts.Config.SegmentBytes == 0 {
		opts.Config = DefaultLogConfig()
	}
	l := &Log{
		dir: dir, tp: tp, fs: opts.FS, clock: opts.Clock, onIOError: opts.OnIOError,
		scheduleDelete: opts.ScheduleDelete,
		log:            opts.Log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}),
	}
	l.firstUnstable.Store(-1)
	l.indexTxn = l.indexCompletedTxn
	cfg := opts.Config
	l.cfg.Store(&cfg)
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: create %s: %v", ErrKafkaStorage, dir, err)
	}
	if err := l.loadTopicID(opts.TopicID); err != nil {
		return nil, err
	}
	if l.epochs, err = openLeaderEpochCache(l.fs, dir); err != nil {
		return nil, err
	}
	l.producerState = newProducerStateManager(dir, l.fs, l.log, opts.ProducerIDExpirationMs, opts.ProducerIDExpirationCheckIntervalMs)
	l.producerState.liveExpirationMs = opts.ProducerIDExpirationLive
	start := time.Now()
	if err := l.load(opts); err != nil {
		l.closeSegments()
		return nil, fmt.Errorf("load %s: %w", tp, err)
	}
	l.log.WithFields(logrus.Fields{
		"log_start_offset": l.LogStartOffset(), "log_end_offset": l.LogEndOffset(),
		"segments": len(l.segments()), "clean_shutdown": opts.CleanShutdown,
		"elapsed_ms": time.Since(start).Milliseconds(),
	}).Debug("loaded log")
	return l, nil
}

func (l *Log) loadTopicID(want [16]byte) error {
	id, found, err := ReadPartitionMetadata(l.fs, l.dir)
	if err != nil {
		return fmt.Errorf("read partition.metadata in %s: %w", l.dir, err)
	}
	zero := [16]byte{}
	switch {
	case found && want != zero && id != want:
		return fmt.Errorf("%w: partition.metadata in %s has topic id %s, expected %s",
			ErrMetaMismatch, l.dir, TopicIDString(id), TopicIDString(want))
	case found:
		l.topicID.Store(&id)
	case want != zero:
		if err := WritePartitionMetadata(l.fs, l.dir, want); err != nil {
			return fmt.Errorf("%w: write partition.metadata: %v", ErrKafkaStorage, err)
		}
		l.topicID.Store(&want)
	}
	return nil
}

// SetTopicID writes partition.metadata if the log has no topic id yet.
func (l *Log) SetTopicID(id [16]byte) error {
	if cur := l.TopicID(); cur != ([16]byte{}) {
		if cur != id {
			return fmt.Errorf("%w: log %s has topic id %s, not %s", ErrMetaMismatch, l.tp, TopicIDString(cur), TopicIDString(id))
		}
		return nil
	}
	return l.loadTopicID(id)
}

func (l *Log) segOpts(base int64, suffix string, active bool) segmentOptions {
	cfg := l.cfg.Load()
	o := segmentOptions{fs: l.fs, dir: l.dir, baseOffset: base, suffix: suffix,
		indexInterval: cfg.IndexIntervalBytes, now: l.clock()}
	if active {
		o.indexBytes = cfg.SegmentIndexBytes
	}
	return o
}

func (l *Log) load(opts LogOpenOptions) error {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("%w: read dir: %v", ErrKafkaStorage, err)
	}
	// 1. Leftovers of deletes and cleaning; swap files complete an interrupted clean.
	var swaps []int64
	names := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(l.dir, name)
		switch {
		case strings.HasSuffix(name, DeletedFileSuffix), strings.HasSuffix(name, CleanedFileSuffix):
			if err := l.fs.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w: remove %s: %v", ErrKafkaStorage, full, err)
			}
		case strings.HasSuffix(name, LogFileSuffix+SwapFileSuffix):
			if base, ok := OffsetFromFileName(name); ok {
				swaps = append(swaps, base)
			}
			names[name] = true
		default:
			names[name] = true
		}
	}
	for _, base := range swaps {
		if err := l.completeSwap(base, names); err != nil {
			return err
		}
	}
	if len(swaps) > 0 {
		if entries, err = l.fs.ReadDir(l.dir); err != nil {
			return fmt.Errorf("%w: read dir: %v", ErrKafkaStorage, err)
		}
		names = map[string]bool{}
		for _, e := range entries {
			names[e.Name()] = true
		}
	}
	// 2. Indexes without a .log go; 3. open the segments.
	var bases []int64
	for name := range names {
		base, ok := OffsetFromFileName(name)
		if !ok {
			continue
		}
		ext := name[20:]
		switch ext {
		case LogFileSuffix:
			bases = append(bases, base)
		case IndexFileSuffix, TimeIndexFileSuffix, TxnIndexFileSuffix:
			if !names[FilenamePrefixFromOffset(base)+LogFileSuffix] {
				_ = l.fs.Remove(filepath.Join(l.dir, name))
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	cfg := l.cfg.Load()
	var segs []*Segment
	for i, base := range bases {
		prefix := FilenamePrefixFromOffset(base)
		missingIndex := !names[prefix+IndexFileSuffix] || !names[prefix+TimeIndexFileSuffix]
		seg, err := openSegment(l.segOpts(base, "", false))
		if err != nil {
			return err
		}
		segs = append(segs, seg)
		if missingIndex || seg.rebuildTxnIndex || seg.offsetIdx.sanityCheck(seg.size.Load()) != nil || seg.timeIdx.sanityCheck() != nil {
			l.log.WithField("segment", base).Warn("rebuilding missing or corrupt index")
			if _, err := l.recoverSegmentWithTxnIndex(seg, cfg, i == len(bases)-1); err != nil {
				return err
			}
		}
	}
	// 4. Unclean shutdown: recover from the segment holding the recovery point on.
	if !opts.CleanShutdown && len(segs) > 0 {
		first := 0
		for first+1 < len(segs) && segs[first+1].baseOffset <= opts.RecoveryPoint {
			first++
		}
		for i := first; i < len(segs); i++ {
			truncated, err := l.recoverSegmentWithTxnIndex(segs[i], cfg, i == len(segs)-1)
			if err != nil {
				return err
			}
			if truncated > 0 && i+1 < len(segs) {
				l.log.WithFields(logrus.Fields{"segment": segs[i].baseOffset, "deleted_segments": len(segs) - i - 1}).
					Warn("corruption found, deleting all later segments")
				for _, s := range segs[i+1:] {
					if err := s.deleteFiles(); err != nil {
						return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
					}
				}
				segs = segs[:i+1]
				break
			}
		}
	}
	// Segments whose next segment starts before their end overlap: a sign of corruption we
	// cannot repair here; Kafka would fail the load too.
	logStart := max(opts.LogStartOffset, 0)
	// 5. Everything below the log start: start empty at it.
	if len(segs) > 0 {
		next, err := segs[len(segs)-1].readNextOffset()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
		}
		if next < logStart {
			for _, s := range segs {
				if err := s.deleteFiles(); err != nil {
					return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
				}
			}
			segs = nil
		}
	}
	if len(segs) == 0 {
		o := l.segOpts(logStart, "", true)
		o.create = true
		seg, err := openSegment(o)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
		}
		segs = append(segs, seg)
	}
	active := segs[len(segs)-1]
	// The active segment's indexes are preallocated at its first append (Kafka's LazyIndex
	// defers the same work), so a start-up that appends nothing touches no index.
	active.rollJitterMs = l.rollJitter()
	var leo int64
	for _, s := range segs {
		next, err := s.loadTimestamps()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
		}
		leo = next // the last segment's next offset is the LEO
	}
	// The appender's index counter for the active segment: bytes since its last entry.
	if n := active.offsetIdx.Entries(); n > 0 {
		_, pos, _ := active.offsetIdx.Entry(n - 1)
		active.bytesSinceLastIndexEntry = active.size.Load() - pos
	} else {
		active.bytesSinceLastIndexEntry = active.size.Load()
	}
	l.segs.Store(&segs)
	l.logEndOffset.Store(leo)
	logStart = max(logStart, segs[0].baseOffset)
	if logStart > leo {
		logStart = leo
	}
	l.logStartOffset.Store(logStart)
	if l.epochsDirty {
		if err := l.epochs.Flush(); err != nil {
			return err
		}
	}
	if err := l.epochs.TruncateFromEnd(leo); err != nil {
		return err
	}
	if err := l.epochs.TruncateFromStart(logStart); err != nil {
		return err
	}
	rp := leo
	if !opts.CleanShutdown {
		rp = min(max(opts.RecoveryPoint, 0), leo)
	}
	l.recoveryPoint.Store(rp)
	l.highWatermark.Store(min(max(opts.HighWatermark, logStart), leo))
	l.mu.lastFlush = l.clock()
	// 8. Producer state: the latest snapshot <= LEO, then the batches after it. Segments
	// recovery re-validated get their .txnindex back from this replay, so it must start at
	// or before the first of them: later snapshots may reflect data that was not flushed
	// and go (LogLoader.recoverSegment rebuilds producer state up to the segment with
	// truncateAndReload, which deletes them).
	l.producerState.setSnapshots(names)
	rebuildFrom := int64(-1)
	for _, s := range segs {
		if s.rebuildTxnIndex {
			rebuildFrom = s.baseOffset
			break
		}
	}
	if rebuildFrom >= 0 {
		l.producerState.deleteSnapshotsWhere(func(off int64) bool { return off > rebuildFrom })
	}
	err = l.rebuildProducerState(leo, logStart, "load")
	for _, s := range segs {
		s.rebuildTxnIndex = false
	}
	if err != nil {
		return err
	}
	l.updateFirstUnstableLocked()
	return nil
}

// recoverSegmentWithTxnIndex is recoverSegment plus the reset of the segment's .txnindex,
// whose entries the producer-state replay at the end of load writes again
// (LogSegment.recover resets txnIndex and re-appends aborted transactions). A segment
// without ABORT markers has no entries to rebuild: it is not flagged, so the replay need
// not start before it (Kafka replays anyway; the index comes out the same, empty).
func (l *Log) recoverSegmentWithTxnIndex(s *Segment, cfg *LogConfig, active bool) (int64, error) {
	if err := s.txnIdx.reset(); err != nil {
		return 0, err
	}
	truncated, err := l.recoverSegment(s, cfg, active)
	s.rebuildTxnIndex = s.recoveredAbortMarker
	return truncated, err
}

// completeSwap finishes an interrupted cleaner swap: segments the swap covers are deleted
// and the .swap files take their place (LogLoader.removeTempFilesAndCollectSwapFiles + load).
func (l *Log) completeSwap(base int64, names map[string]bool) error {
	seg, err := openSegment(l.segOpts(base, SwapFileSuffix, false))
	if err != nil {
		return err
	}
	if _, err := l.recoverSegment(seg, l.cfg.Load(), false); err != nil {
		seg.closeNoTrim()
		return err
	}
	next, err := seg.readNextOffset()
	seg.closeNoTrim()
	if err != nil {
		return err
	}
	for name := range names {
		b, ok := OffsetFromFileName(name)
		if !ok || strings.HasSuffix(name, SwapFileSuffix) || b < base || b >= next {
			continue
		}
		if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
		}
		delete(names, name)
	}
	prefix := FilenamePrefixFromOffset(base)
	for _, ext := range []string{LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix, TxnIndexFileSuffix} {
		from := filepath.Join(l.dir, prefix+ext+SwapFileSuffix)
		if err := l.fs.Rename(from, filepath.Join(l.dir, prefix+ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
		}
	}
	l.log.WithField("segment", base).Info("completed interrupted segment swap")
	return nil
}

// recoverSegment rebuilds seg's indexes and epoch entries by validating every batch, and
// truncates the file at the first invalid byte (LogSegment.recover). It returns the number
// of bytes truncated.
func (l *Log) recoverSegment(s *Segment, cfg *LogConfig, active bool) (int64, error) {
	maxIdx := int64(cfg.SegmentIndexBytes)
	if err := s.offsetIdx.resize(maxIdx); err != nil {
		return 0, err
	}
	if err := s.timeIdx.resize(maxIdx); err != nil {
		return 0, err
	}
	s.offsetIdx.reset()
	s.timeIdx.reset()
	s.recoveredAbortMarker = false
	s.maxTimestampSoFar.Store(-1)
	s.offsetOfMaxTimestampSoFar.Store(s.baseOffset)
	st, err := s.log.Stat()
	if err != nil {
		return 0, fmt.Errorf("%w: stat %s: %v", ErrKafkaStorage, s.logPath(), err)
	}
	fileSize := st.Size()
	var (
		validBytes, lastIndexEntry int64
		buf                        []byte
		nextOffset                 = s.baseOffset
		reason                     error
	)
	for validBytes < fileSize {
		b, err := readBatchAt(s.osFile, validBytes, fileSize, &buf)
		if err == nil {
			err = checkRecoveredBatch(s, b, nextOffset)
		}
		abortMarker := false
		if err == nil && b.Control() && b.ProducerID() >= 0 {
			// A control batch of a producer must be a COMMIT or ABORT marker
			// (ProducerAppendInfo.append throws InvalidRecordException otherwise). Kafka's
			// LogSegment.recover keeps that batch and cuts after it, then fails the load when
			// producer state is rebuilt over it; here it is cut with everything after it, so
			// the log loads, with the transaction it meant to end still open as the log
			// before it left it (a follower gets the leader's marker again by fetching).
			var m endTxnMarker
			var ok bool
			m, ok, err = parseEndTxnMarker(b)
			abortMarker = ok && !m.commit
		}
		if err != nil {
			reason = err
			break
		}
		if ts := b.MaxTimestamp(); ts > s.maxTimestampSoFar.Load() {
			s.maxTimestampSoFar.Store(ts)
			s.offsetOfMaxTimestampSoFar.Store(b.LastOffset())
		}
		if validBytes-lastIndexEntry > int64(cfg.IndexIntervalBytes) {
			if err := s.offsetIdx.Append(b.LastOffset(), validBytes); err != nil {
				reason = err
				break
			}
			_ = s.timeIdx.MaybeAppend(s.maxTimestampSoFar.Load(), s.offsetOfMaxTimestampSoFar.Load(), false)
			lastIndexEntry = validBytes
		}
		if ep := b.PartitionLeaderEpoch(); ep >= 0 {
			if latest, ok := l.epochs.LatestEpoch(); !ok || ep > latest {
				if l.epochs.assign(ep, b.BaseOffset()) {
					l.epochsDirty = true
				}
			}
		}
		if abortMarker {
			s.recoveredAbortMarker = true
		}
		nextOffset = b.NextOffset()
		validBytes += int64(len(b))
	}
	truncated := fileSize - validBytes
	if truncated > 0 {
		l.log.WithFields(logrus.Fields{"segment": s.baseOffset, "position": validBytes, "truncated_bytes": truncated}).
			WithError(reason).Warn("found invalid bytes in segment, truncating")
		if err := s.log.Truncate(validBytes); err != nil {
			return 0, fmt.Errorf("%w: truncate %s: %v", ErrKafkaStorage, s.logPath(), err)
		}
	}
	s.size.Store(validBytes)
	s.bytesSinceLastIndexEntry = validBytes - lastIndexEntry
	if active {
		s.indexesSized = true
		return truncated, nil // stays preallocated for appends
	}
	s.indexesSized = false
	_ = s.timeIdx.MaybeAppend(s.maxTimestampSoFar.Load(), s.offsetOfMaxTimestampSoFar.Load(), true)
	if err := s.offsetIdx.trimToValidSize(); err != nil {
		return 0, err
	}
	if err := s.timeIdx.trimToValidSize(); err != nil {
		return 0, err
	}
	return truncated, nil
}

// checkRecoveredBatch: CRC and framing are checked by readBatchAt; offsets must fit the
// segment and not go backwards (stricter than Kafka, whose CRC does not cover baseOffset).
func checkRecoveredBatch(s *Segment, b recordbatch.Batch, nextOffset int64) error {
	if b.LastOffsetDelta() < 0 {
		return fmt.Errorf("%w: negative lastOffsetDelta", ErrCorruptMessage)
	}
	if b.BaseOffset() < nextOffset {
		return fmt.Errorf("%w: batch base offset %d below %d", ErrCorruptMessage, b.BaseOffset(), nextOffset)
	}
	if !s.canConvertToRelativeOffset(b.LastOffset()) || b.LastOffset() == math.MaxInt64 {
		return fmt.Errorf("%w: offset %d out of segment range", ErrCorruptMessage, b.LastOffset())
	}
	return nil
}

// readBatchAt reads and validates (length, magic, CRC) the whole batch at pos, reusing *buf.
func readBatchAt(f *os.File, pos, end int64, buf *[]byte) (recordbatch.Batch, error) {
	if end-pos < recordbatch.HeaderSize {
		return nil, recordbatch.ErrShort
	}
	var hdr [recordbatch.LogOverhead]byte
	if _, err := f.ReadAt(hdr[:], pos); err != nil {
		return nil, err
	}
	size, err := recordbatch.PeekSize(hdr[:])
	if err != nil {
		return nil, err
	}
	if int64(size) > end-pos {
		return nil, recordbatch.ErrShort
	}
	if cap(*buf) < size {
		*buf = make([]byte, size)
	}
	b := (*buf)[:size]
	if _, err := f.ReadAt(b, pos); err != nil {
		return nil, err
	}
	if err := recordbatch.Validate(b); err != nil {
		return nil, err
	}
	return recordbatch.Batch(b), nil
}

func (l *Log) closeSegments() {
	for _, s := range l.segments() {
		_ = s.close()
	}
}
