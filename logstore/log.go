package logstore

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Log is one partition's log, mirroring Kafka's UnifiedLog + LocalLog: a list of segments
// named by base offset, the last one active.
//
// Concurrency: one appender at a time (AppendAsLeader/AppendAsFollower/Truncate*/Roll/
// DeleteOldSegments/ReplaceSegments serialize on mu). Readers (Read, OffsetForTimestamp, the
// offset getters) never take mu: they load the published segment list and each segment's
// published size atomically and read with positional I/O. Flushes (Flush, FlushIfNeeded and
// the background flush a roll schedules) fsync holding flushMu only, as Kafka's
// UnifiedLog.flush does: they take mu to read what to flush and to move the recovery point.
type Log struct {
	dir       string
	tp        TopicPartition
	fs        FS
	clock     func() time.Time
	log       *logrus.Entry
	onIOError func(error)

	scheduleDelete func(delay time.Duration, fn func())

	cfg     atomic.Pointer[LogConfig]
	topicID atomic.Pointer[[16]byte]

	// segs is the copy-on-write segment list, oldest first, never empty while open.
	segs atomic.Pointer[[]*Segment]

	logEndOffset   atomic.Int64
	logStartOffset atomic.Int64
	highWatermark  atomic.Int64
	recoveryPoint  atomic.Int64
	closed         atomic.Bool
	// firstUnstable is the published first unstable offset (-1: none), and
	// hasUnreplicated whether a completed transaction waits for the high watermark to
	// pass its marker (txn.go); both written under mu.
	firstUnstable   atomic.Int64
	hasUnreplicated atomic.Bool

	epochs      *LeaderEpochFileCache
	epochsDirty bool // recovery assigned epochs not yet written

	// producerState is the idempotent producers' state (ProducerStateManager), under mu.
	producerState *producerStateManager
	// indexTxn is indexCompletedTxn as a func value made once (an append passes it).
	indexTxn func(c completedTxn, lso int64) error

	// flushMu serializes flushes with each other and with Close. Taken before mu, never
	// under it; held across fsync.
	flushMu sync.Mutex
	// flushWG tracks the roll-flush goroutine (Kafka's scheduled "flush-log" task), which
	// the log starts after a roll and Close waits for.
	flushWG sync.WaitGroup

	mu struct {
		sync.Mutex
		offline          bool
		pendingIOErr     error // reported to onIOError once mu is released
		unflushedRecords int64
		lastFlush        time.Time

		// truncations counts truncations: a flush that read the log before one must not
		// move the recovery point, as offsets below its target may since hold new,
		// unsynced data.
		truncations uint64
		// rollFlushTo is the base of the newest segment rolled whose older segments are
		// not yet flushed (0: none due); the roll flusher takes it.
		rollFlushTo int64
		// unsyncedSnapshots are producer snapshots written by rolls without fsync; the
		// next flush syncs them.
		unsyncedSnapshots []string
		rollFlusherOn     bool
	}
}

// LogOpenOptions are what LogManager knows when it opens a partition directory.
type LogOpenOptions struct {
	Config LogConfig
	// TopicID, if non-zero, is written to partition.metadata (or checked against it).
	TopicID [16]byte
	// RecoveryPoint from recovery-point-offset-checkpoint (0 if none): segments from the one
	// holding it onwards are re-validated after an unclean shutdown.
	RecoveryPoint int64
	// LogStartOffset from log-start-offset-checkpoint (-1 or 0 if none).
	LogStartOffset int64
	// HighWatermark from replication-offset-checkpoint (0 if none); clamped to [start, LEO].
	HighWatermark int64
	// CleanShutdown is true when the dir had .kafka_cleanshutdown: no segment is rescanned.
	CleanShutdown bool
	FS            FS
	Clock         func() time.Time
	Log           *logrus.Entry
	// OnIOError is called (once per failure, outside locks) when a write, fsync or truncate
	// fails; the manager takes the log dir offline. The failing call returns ErrKafkaStorage.
	OnIOError func(error)
	// ScheduleDelete runs fn after delay (file.delete.delay.ms); fn closes and removes
	// segments already renamed *.deleted (readers may still hold their files until then).
	// The manager owns that timer. Nil: fn runs at once.
	ScheduleDelete func(delay time.Duration, fn func())
	// ProducerIDExpirationMs is producer.id.expiration.ms and
	// ProducerIDExpirationCheckIntervalMs producer.id.expiration.check.interval.ms
	// (0: Kafka's defaults, 1 day and 10 minutes).
	ProducerIDExpirationMs, ProducerIDExpirationCheckIntervalMs int64
	// ProducerIDExpirationLive, when set and positive, overrides ProducerIDExpirationMs at
	// each expiry check (the manager's dynamic producer.id.expiration.ms).
	ProducerIDExpirationLive *atomic.Int64
}

// SegmentInfo is a snapshot of one segment, for retention and the cleaner.
type SegmentInfo struct {
	BaseOffset int64
	// NextOffset is the next segment's base offset, or the LEO for the active segment.
	NextOffset int64
	Size       int64
	// LargestTimestamp is the max record timestamp, or the .log mtime in ms if it has none
	// (Kafka's LogSegment.largestTimestamp).
	LargestTimestamp int64
	// FirstBatchTimestamp is the max timestamp of the first batch, -1 if the segment is empty
	// (Kafka's rollingBasedTimestamp; used by max.compaction.lag.ms).
	FirstBatchTimestamp int64
	LastModified        time.Time
	Active              bool
	// LogFile is the path of the .log file; the cleaner may read it with positional I/O.
	LogFile string
}

// ParseTopicPartitionDir splits a partition directory name on its last '-'.
func ParseTopicPartitionDir(dir string) (TopicPartition, error) {
	name := trimFutureDirSuffix(filepath.Base(dir)) // <topic>-<p>.<id>-future too (future.go)
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, fmt.Errorf("logstore: %q is not a <topic>-<partition> directory", name)
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TopicPartition{}, fmt.Errorf("logstore: %q is not a <topic>-<partition> directory", name)
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, nil
}

// Config returns the current config.
func (l *Log) Config() LogConfig { return *l.cfg.Load() }

// SetConfig swaps the config (dynamic topic config change); it applies from the next append or roll.
func (l *Log) SetConfig(c LogConfig) { l.cfg.Store(&c) }

// TopicPartition is the partition this log holds.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir is the partition directory. RenameDir changes it under mu (a log-dir move, a delete).
func (l *Log) Dir() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dir
}

// TopicID is the id from partition.metadata (zero if unknown).
func (l *Log) TopicID() [16]byte {
	if p := l.topicID.Load(); p != nil {
		return *p
	}
	return [16]byte{}
}

// LogStartOffset is the first offset a consumer may read.
func (l *Log) LogStartOffset() int64 { return l.logStartOffset.Load() }

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.logEndOffset.Load() }

// HighWatermark is the last published high watermark.
func (l *Log) HighWatermark() int64 { return l.highWatermark.Load() }

// RecoveryPoint is the offset below which everything is fsynced.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// UpdateHighWatermark publishes off clamped to [LogStartOffset, LogEndOffset] and returns
// the value stored. The partition calls it under its own lock; truncation re-clamps.
func (l *Log) UpdateHighWatermark(off int64) int64 {
	if e := l.logEndOffset.Load(); off > e {
		off = e
	}
	if s := l.logStartOffset.Load(); off < s {
		off = s
	}
	l.highWatermark.Store(off)
	// ProducerStateManager.onHighWatermarkUpdated: a completed transaction whose marker is
	// now below the high watermark stops holding the LSO back. updateFirstUnstableLocked
	// raises hasUnreplicated before it reads the high watermark, so either it reads this
	// one or this call sees the flag.
	if l.hasUnreplicated.Load() {
		l.mu.Lock()
		l.updateFirstUnstableLocked()
		l.mu.Unlock()
	}
	return off
}

func (l *Log) segments() []*Segment {
	if p := l.segs.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *Log) activeSegment() *Segment {
	s := l.segments()
	return s[len(s)-1]
}

// deleteSegmentsLocked renames segs to *.deleted and schedules their close and removal after
// file.delete.delay.ms (LocalLog.deleteSegmentFiles), so readers holding their files finish.
func (l *Log) deleteSegmentsLocked(segs []*Segment) error {
	if len(segs) == 0 {
		return nil
	}
	var firstErr error
	for _, s := range segs {
		if err := s.changeSuffix(DeletedFileSuffix); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	del := func() {
		for _, s := range segs {
			if err := s.deleteFiles(); err != nil {
				l.log.WithError(err).WithField("segment", s.baseOffset).Warn("cannot delete segment files")
			}
		}
	}
	delay := time.Duration(l.cfg.Load().FileDeleteDelayMs) * time.Millisecond
	if l.scheduleDelete != nil {
		l.scheduleDelete(delay, del)
	} else {
		del()
	}
	if firstErr != nil {
		l.ioFailed(firstErr)
	}
	return firstErr
}

// TruncateTo removes every record at or above offset (follower truncation). Segments
// starting above offset are deleted; the one holding it is cut at the batch boundary.
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("logstore: cannot truncate %s to negative offset %d", l.tp, offset)
	}
	l.mu.Lock()
	defer l.unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if offset >= l.logEndOffset.Load() {
		// Nothing to cut, but the epoch cache may end with an entry at the log end that a
		// leader assigned before it appended anything: drop it, or a follower keeps sending
		// that epoch as its last fetched one and the leader keeps reporting divergence
		// (UnifiedLog.truncateTo always truncates the epoch cache).
		if err := l.epochs.TruncateFromEnd(l.logEndOffset.Load()); err != nil {
			l.ioFailed(err)
			return err
		}
		return nil
	}
	if offset < l.logStartOffset.Load() {
		return l.truncateFullyLocked(offset)
	}
	segs := l.segments()
	keep := segs[:0:0]
	var drop []*Segment
	for _, s := range segs {
		if s.baseOffset > offset {
			drop = append(drop, s)
		} else {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		return l.truncateFullyLocked(offset)
	}
	active := keep[len(keep)-1]
	l.mu.truncations++
	// Publish the shorter list and end first so readers stop at the new end.
	l.logEndOffset.Store(offset)
	l.segs.Store(&keep)
	if _, err := active.truncateTo(offset, l.cfg.Load().SegmentIndexBytes); err != nil {
		err = fmt.Errorf("%w: truncate %s: %v", ErrKafkaStorage, l.tp, err)
		l.ioFailed(err)
		return err
	}
	active.rollJitterMs = l.rollJitter()
	if err := l.deleteSegmentsLocked(drop); err != nil {
		return err
	}
	// Truncating to inside a batch drops the whole batch: the LEO is the end of what is left.
	leo, err := active.readNextOffset()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	if leo > offset {
		leo = offset
	}
	l.logEndOffset.Store(max(leo, active.baseOffset))
	if err := l.epochs.TruncateFromEnd(l.logEndOffset.Load()); err != nil {
		l.ioFailed(err)
		return err
	}
	if hw := l.highWatermark.Load(); hw > l.logEndOffset.Load() {
		l.highWatermark.Store(l.logEndOffset.Load())
	}
	if rp := l.recoveryPoint.Load(); rp > l.logEndOffset.Load() {
		l.recoveryPoint.Store(l.logEndOffset.Load())
	}
	// Producer state: snapshots beyond the new end go, the rest is reloaded
	// (UnifiedLog.truncateTo -> rebuildProducerState).
	if err := l.rebuildProducerState(l.logEndOffset.Load(), l.logStartOffset.Load(), "truncate"); err != nil {
		l.ioFailed(err)
		return err
	}
	l.updateFirstUnstableLocked()
	l.log.WithField("offset", offset).Info("truncated log")
	return nil
}

// TruncateFullyAndStartAt deletes every segment and starts empty at offset.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	old := l.segments()
	o := l.segOpts(offset, "", true)
	o.create = true
	l.mu.truncations++
	// The new segment may share the base of an old one: move the old ones out first.
	if err := l.deleteSegmentsLocked(old); err != nil {
		return err
	}
	seg, err := openSegment(o)
	if err != nil {
		err = fmt.Errorf("%w: %v", ErrKafkaStorage, err)
		l.ioFailed(err)
		return err
	}
	seg.rollJitterMs = l.rollJitter()
	ns := []*Segment{seg}
	l.logEndOffset.Store(offset)
	l.segs.Store(&ns)
	l.logStartOffset.Store(offset)
	l.highWatermark.Store(offset)
	l.recoveryPoint.Store(offset)
	if err := l.epochs.Clear(); err != nil {
		l.ioFailed(err)
		return err
	}
	// ProducerStateManager.truncateFullyAndStartAt: no producers, no snapshots.
	l.producerState.deleteSnapshotsWhere(func(int64) bool { return true })
	l.producerState.producers = map[int64]*producerStateEntry{}
	l.producerState.clearTxns()
	l.producerState.mapEndOffset, l.producerState.lastSnapOffset = offset, 0
	l.updateFirstUnstableLocked()
	l.log.WithField("offset", offset).Info("truncated log fully")
	return nil
}

// MaybeIncrementLogStartOffset raises the log start offset (DeleteRecords, retention). It
// may not pass the high watermark.
func (l *Log) MaybeIncrementLogStartOffset(offset int64) error {
	l.mu.Lock()
	defer l.unlock()
	if offset > l.highWatermark.Load() {
		return fmt.Errorf("%w: cannot increment the log start offset of %s to %d beyond the high watermark %d",
			ErrOffsetOutOfRange, l.tp, offset, l.highWatermark.Load())
	}
	return l.incrementStartLocked(offset)
}

func (l *Log) incrementStartLocked(offset int64) error {
	if offset <= l.logStartOffset.Load() {
		return nil
	}
	l.logStartOffset.Store(offset)
	// onLogStartOffsetIncremented + maybeIncrementFirstUnstableOffset.
	l.updateFirstUnstableLocked()
	if err := l.epochs.TruncateFromStart(offset); err != nil {
		l.ioFailed(err)
		return err
	}
	return nil
}

// DeleteOldSegments is UnifiedLog.deleteOldSegments(predicate): oldest first, while pred
// holds, the segment is below the high watermark and it is not the empty last one. If every
// segment goes, a new empty one is rolled first. The log start moves to the first remaining
// segment. It returns how many segments were deleted. pred runs under the append lock: it
// may call the lock-free getters (Segments, HighWatermark, ...) but nothing that appends,
// truncates or flushes.
func (l *Log) DeleteOldSegments(pred func(seg SegmentInfo, next *SegmentInfo) bool, reason string) (int, error) {
	l.mu.Lock()
	defer l.unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	infos := l.Segments()
	hw := l.highWatermark.Load()
	n := 0
	for i := range infos {
		var next *SegmentInfo
		if i+1 < len(infos) {
			next = &infos[i+1]
		}
		upper := infos[i].NextOffset
		lastAndEmpty := next == nil && infos[i].Size == 0
		if hw >= upper && !lastAndEmpty && pred(infos[i], next) {
			n++
			continue
		}
		break
	}
	if n == 0 {
		return 0, nil
	}
	segs := l.segments()
	if n == len(segs) {
		if _, err := l.rollLocked(l.logEndOffset.Load(), l.clock()); err != nil {
			return 0, err
		}
		segs = l.segments()
	}
	drop := segs[:n]
	keep := append([]*Segment(nil), segs[n:]...)
	l.segs.Store(&keep)
	if err := l.incrementStartLocked(keep[0].baseOffset); err != nil {
		return 0, err
	}
	// Snapshots of deleted segments go with them (deleteProducerSnapshots).
	logStart := l.logStartOffset.Load()
	l.producerState.deleteSnapshotsWhere(func(off int64) bool { return off < logStart })
	l.log.WithFields(logrus.Fields{"segments": n, "reason": reason, "log_start_offset": l.logStartOffset.Load()}).
		Info("deleting old segments")
	return n, l.deleteSegmentsLocked(drop)
}

// Flush fsyncs every segment holding offsets at or above the recovery point and moves the
// recovery point to the LEO as of the call. Appends go on meanwhile: the fsyncs run without
// mu (UnifiedLog.flush).
func (l *Log) Flush() error {
	return l.flushTo(math.MaxInt64, true)
}

// FlushIfNeeded applies flush.ms (flush.messages is applied on append): the manager's flush
// ticker calls it.
func (l *Log) FlushIfNeeded() error {
	l.mu.Lock()
	due := false
	if !l.closed.Load() && !l.mu.offline && l.mu.unflushedRecords > 0 {
		cfg := l.cfg.Load()
		due = cfg.FlushMs != longMax && l.clock().Sub(l.mu.lastFlush) >= time.Duration(cfg.FlushMs)*time.Millisecond
	}
	l.unlock()
	if !due {
		return nil
	}
	return l.flushTo(math.MaxInt64, true)
}

// flushTo makes every offset below upTo (clamped to the LEO) durable and then moves the
// recovery point there: the segments from the recovery point on, producer snapshots written
// by rolls, and the directory when a segment was created since the last flush (new files'
// entries; LocalLog.flush). mu is held only to read that list and to move the recovery
// point, so the recovery point (and the checkpoint written from it) never runs ahead of
// what is synced. full: a Flush, which also resets the flush.messages/flush.ms counters.
func (l *Log) flushTo(upTo int64, full bool) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()

	l.mu.Lock()
	if l.closed.Load() {
		l.unlock()
		return ErrClosed
	}
	upTo = min(upTo, l.logEndOffset.Load())
	rp := l.recoveryPoint.Load()
	unflushed := l.mu.unflushedRecords
	if rp >= upTo && len(l.mu.unsyncedSnapshots) == 0 && (!full || unflushed == 0) {
		l.unlock()
		return nil
	}
	gen := l.mu.truncations
	snaps := l.mu.unsyncedSnapshots
	l.mu.unsyncedSnapshots = nil
	segs := l.segments()
	dir := l.dir
	l.unlock()

	syncDir := false
	for _, p := range snaps {
		if err := syncFileIfExists(l.fs, p); err != nil {
			return l.flushFailed(nil, fmt.Errorf("%w: fsync %s: %v", ErrKafkaStorage, p, err))
		}
		syncDir = true
	}
	for i, s := range segs {
		if s.baseOffset >= upTo {
			break // holds nothing below upTo
		}
		if i+1 < len(segs) && segs[i+1].baseOffset <= rp {
			continue // wholly below the recovery point: synced already
		}
		if err := s.flush(); err != nil {
			if err := l.flushFailed(s, err); err != nil {
				return err
			}
			continue // deleted meanwhile: nothing of it to keep
		}
		if s.baseOffset >= rp {
			syncDir = true
		}
	}
	if syncDir {
		if err := l.fs.SyncDir(dir); err != nil {
			return l.flushFailed(nil, fmt.Errorf("%w: fsync dir %s: %v", ErrKafkaStorage, dir, err))
		}
	}

	l.mu.Lock()
	defer l.unlock()
	// A truncation since the read may have put new, unsynced data below upTo.
	if l.mu.truncations == gen && !l.closed.Load() && upTo > l.recoveryPoint.Load() {
		l.recoveryPoint.Store(upTo)
	}
	if full {
		l.mu.unflushedRecords = max(0, l.mu.unflushedRecords-unflushed)
		l.mu.lastFlush = l.clock()
	}
	return nil
}

// flushFailed takes the log offline for a failed flush and returns the error, unless the
// failing segment was deleted or replaced (retention, cleaning, truncation) while the flush
// ran without mu (nil: its files may be closed by then, and what it held needs no flush)
// or the log closed (ErrClosed).
func (l *Log) flushFailed(s *Segment, err error) error {
	l.mu.Lock()
	defer l.unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if s != nil && !slices.Contains(l.segments(), s) {
		l.log.WithError(err).WithField("segment", s.baseOffset).Debug("flush of a segment removed meanwhile failed; ignored")
		return nil
	}
	l.ioFailed(err)
	return err
}

// scheduleRollFlushLocked records that the segments below newBase are inactive and must be
// flushed, with the roll's producer snapshot; unlock starts the roll flusher
// (UnifiedLog.roll's scheduler.scheduleOnce("flush-log", ...)). Callers hold mu.
func (l *Log) scheduleRollFlushLocked(newBase int64, snapshot string) {
	l.mu.rollFlushTo = max(l.mu.rollFlushTo, newBase)
	if snapshot != "" {
		l.mu.unsyncedSnapshots = append(l.mu.unsyncedSnapshots, snapshot)
	}
}

// rollFlusher flushes up to the newest rolled segment until no roll flush is due or the
// log closes. Started by unlock; Close waits for it.
func (l *Log) rollFlusher() {
	defer l.flushWG.Done()
	for {
		l.mu.Lock()
		upTo := l.mu.rollFlushTo
		l.mu.rollFlushTo = 0
		if upTo == 0 || l.closed.Load() {
			l.mu.rollFlusherOn = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		// An error took the log offline (flushTo reported it); nothing to retry.
		_ = l.flushTo(upTo, false)
	}
}

// markFlushedLocked moves the recovery point to upTo after an fsync of the segment based
// at segBase only (flush.messages), if every older segment is synced already: a roll's
// flush of the older ones may still be running. Callers hold mu.
func (l *Log) markFlushedLocked(segBase, upTo int64) {
	if rp := l.recoveryPoint.Load(); rp >= segBase && upTo > rp {
		l.recoveryPoint.Store(upTo)
	}
}

// Close flushes nothing (the manager flushes first at clean shutdown), trims the active
// segment's indexes and closes every file. It waits for a running flush and for the roll
// flusher to end.
func (l *Log) Close() error {
	l.flushMu.Lock()
	err := l.close()
	l.flushMu.Unlock()
	l.flushWG.Wait()
	return err
}

func (l *Log) close() error {
	l.mu.Lock()
	defer l.unlock()
	if l.closed.Load() {
		return nil
	}
	var errs []error
	// UnifiedLog.close takes a producer snapshot at the LEO, so a clean restart replays nothing.
	if !l.mu.offline {
		if err := l.takeProducerSnapshotLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	l.closed.Store(true)
	for _, s := range l.segments() {
		if err := s.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CloseAndDelete closes the log and removes its directory (after DeleteLog's rename).
func (l *Log) CloseAndDelete() error {
	if err := l.Close(); err != nil {
		return err
	}
	return l.fs.RemoveAll(l.dir)
}

// RenameDir moves the log directory (e.g. to <topic>-<p>.<uuid>-delete); files stay open.
// A flush in progress ends first: it would fsync the old path.
func (l *Log) RenameDir(newDir string) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.unlock()
	if err := l.fs.Rename(l.dir, newDir); err != nil {
		return fmt.Errorf("%w: rename %s: %v", ErrKafkaStorage, l.dir, err)
	}
	l.dir = newDir
	for _, s := range l.segments() {
		s.loc.Store(&segmentLoc{dir: newDir, suffix: s.loc.Load().suffix})
		s.offsetIdx.path = s.indexPath()
		s.timeIdx.path = s.timePath()
		s.txnIdx.setPath(s.txnPath())
	}
	l.epochs.path = filepath.Join(newDir, LeaderEpochCheckpointFile)
	l.producerState.dir = newDir
	return nil
}

// IsOffline reports whether an I/O error took this log offline.
func (l *Log) IsOffline() bool {
	l.mu.Lock()
	defer l.unlock()
	return l.mu.offline
}

// unlock releases mu and then reports an I/O error recorded under it, so the manager's
// callback never runs under the log lock, and starts the roll flusher if a roll made a
// flush due.
func (l *Log) unlock() {
	err := l.mu.pendingIOErr
	l.mu.pendingIOErr = nil
	startFlusher := l.mu.rollFlushTo > 0 && !l.mu.rollFlusherOn && !l.closed.Load() && !l.mu.offline
	if startFlusher {
		l.mu.rollFlusherOn = true
		l.flushWG.Add(1)
	}
	l.mu.Unlock()
	if startFlusher {
		go l.rollFlusher()
	}
	if err != nil && l.onIOError != nil {
		l.onIOError(err)
	}
}

// MaybeAssignEpochStartOffset records that epoch starts at startOffset (normally the LEO when
// this broker becomes leader), as UnifiedLog.maybeAssignEpochStartOffset.
func (l *Log) MaybeAssignEpochStartOffset(epoch int32, startOffset int64) error {
	l.mu.Lock()
	defer l.unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if _, err := l.epochs.Assign(epoch, startOffset); err != nil {
		l.ioFailed(err)
		return err
	}
	return nil
}
