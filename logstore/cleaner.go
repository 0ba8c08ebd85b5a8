package logstore

// Log compaction, mirroring Kafka's LogCleaner, LogCleanerManager and Cleaner
// (core/src/main/scala/kafka/log/LogCleaner.scala, LogCleanerManager.scala) and the
// record filter of MemoryRecords.filterTo.
//
// One pass over a log:
//  1. cleanable range [firstDirty, firstUncleanable): firstDirty from cleaner-offset-checkpoint
//     (reset to the log start when out of range); firstUncleanable = min(last stable offset,
//     active segment base, first segment younger than min.compaction.lag.ms).
//  2. offset map: MD5(key) -> latest offset over the dirty segments, bounded by
//     log.cleaner.dedupe.buffer.size at a 0.9 load factor (SkimpyOffsetMap's 24-byte slots).
//     Batches of aborted transactions and control batches add no keys.
//  3. every segment from the log start up to the end of the map is rewritten, in groups
//     that fit segment.bytes, keeping a record iff it is past the map or it is its key's
//     latest and (has a value, or is a tombstone still inside its delete horizon).
//     Batches keep their base and last offsets (holes appear), their producer fields and
//     codec. A retained batch with tombstones gets the KIP-534 delete horizon
//     (now + delete.retention.ms); a later pass after the horizon drops them.
//     Transactions (CleanedTransactionMetadata, fed from the .txnindex files): batches of
//     aborted transactions are dropped; an ABORT marker stays while this pass still saw
//     data of its transaction (and goes to the cleaned segment's .txnindex), a COMMIT
//     marker while it saw data of its transaction; a marker that may go gets a delete
//     horizon like a tombstone and is removed by a pass after it. The batch holding an
//     active producer's last data offset (or its last marker, if it has no data left)
//     is kept, emptied if need be, so its sequence and epoch survive.
//  4. the group is written as <base>.log.cleaned, renamed .swap and swapped in by the Log
//     (old segments become .deleted); then firstDirty = end of the map is checkpointed.

import (
	"crypto/md5"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/sirupsen/logrus"
)

// compactLog is the segment-level surface the cleaner needs; *Log implements it
// (cleaner_log.go), tests may use an in-memory one.
type compactLog interface {
	TopicPartition() TopicPartition
	Config() LogConfig
	LogStartOffset() int64
	LogEndOffset() int64
	HighWatermark() int64
	LastStableOffset() int64
	Segments() []SegmentInfo
	// collectAbortedTransactions lists the aborted transactions overlapping
	// [start, upper) from the transaction indexes.
	collectAbortedTransactions(start, upper int64) []AbortedTxn
	// lastRecordsOfActiveProducers maps each active producer to its last data offset
	// (-1 if its last entry is a marker) and epoch.
	lastRecordsOfActiveProducers() map[int64]lastRecord
	// forEachBatch calls fn for every batch of the segment with that base offset.
	forEachBatch(segBase int64, fn func(b recordbatch.Batch) error) error
	// replaceWithCleaned writes a new segment with base offset base from the batches that
	// emit hands to write (and the aborted transactions it hands to index, for the new
	// segment's .txnindex), and swaps it in for the segments whose bases are oldBases,
	// crash-safely (.cleaned -> .swap -> rename).
	replaceWithCleaned(base int64, oldBases []int64, emit func(write func(batch []byte) error, index func(AbortedTxn) error) error) error
}

// CleanerStats is what one cleaning pass did (Kafka's CleanerStats, trimmed).
type CleanerStats struct {
	TopicPartition               TopicPartition
	FirstDirty, EndOffset        int64
	BytesRead, BytesWritten      int64
	RecordsRead, RecordsRetained int64
	TombstonesDropped            int64
	Groups                       int
	BufferUtilization            float64 // offset map entries / capacity (CleanerStats.bufferUtilization)
}

// Cleaner is LogCleaner + LogCleanerManager: it picks the filthiest compacted log, cleans
// it, and keeps the cleaner-offset-checkpoint of each dir. Concurrency: its state is under
// mu; one cleaning pass runs at a time (the Manager's cleaner goroutine); retention and
// deletion coordinate through tryPause/resume/abort.
type Cleaner struct {
	m   *Manager
	log *logrus.Entry

	mu struct {
		sync.Mutex
		// done is signalled when a log leaves inProgress.
		done       *sync.Cond
		inProgress map[TopicPartition]bool
		aborted    map[TopicPartition]bool
		// checkpoints: dir -> tp -> first dirty offset (cleaner-offset-checkpoint).
		checkpoints map[string]map[TopicPartition]int64
	}
	// cleanerDynamic holds what dynamic configs change (dynamic.go).
	cleanerDynamic
	stats cleanerStatsState // for the LogCleaner gauges (cleaner_stats.go)
}

func newCleaner(m *Manager) *Cleaner {
	c := &Cleaner{m: m, log: m.log.WithField("component", "log.cleaner")}
	c.mu.done = sync.NewCond(&c.mu.Mutex)
	c.mu.inProgress = make(map[TopicPartition]bool)
	c.mu.aborted = make(map[TopicPartition]bool)
	c.mu.checkpoints = make(map[string]map[TopicPartition]int64)
	for _, dir := range m.OnlineDirs() {
		cp, err := ReadOffsetCheckpoint(m.fs, filepath.Join(dir, CleanerCheckpointFile))
		if err != nil {
			c.log.WithError(err).WithField("dir", dir).Warn("failed to read cleaner offset checkpoint, cleaning from the log start")
			cp = map[TopicPartition]int64{}
		}
		c.mu.checkpoints[dir] = cp
	}
	return c
}

// tryPause marks tp busy; false if the cleaner or retention is already on it.
func (c *Cleaner) tryPause(tp TopicPartition) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.inProgress[tp] {
		return false
	}
	c.mu.inProgress[tp] = true
	return true
}

// pause waits until no pass works on tp and marks it busy (abortAndPauseCleaning).
func (c *Cleaner) pause(tp TopicPartition) {
	c.mu.Lock()
	for c.mu.inProgress[tp] {
		c.mu.aborted[tp] = true
		c.mu.done.Wait()
	}
	c.mu.inProgress[tp] = true
	c.mu.Unlock()
}

// maybeTruncateCheckpoint is LogCleanerManager.maybeTruncateCheckpoint: after a truncation
// a first dirty offset beyond offset is pulled back to it.
func (c *Cleaner) maybeTruncateCheckpoint(dir string, l *Log, offset int64) {
	if !l.Config().Compact() {
		return
	}
	tp := l.TopicPartition()
	c.mu.Lock()
	cp, ok := c.mu.checkpoints[dir][tp]
	changed := ok && cp > offset
	if changed {
		c.mu.checkpoints[dir][tp] = offset
	}
	c.mu.Unlock()
	if changed {
		c.checkpointDir(dir)
	}
}

func (c *Cleaner) resume(tp TopicPartition) {
	c.mu.Lock()
	delete(c.mu.inProgress, tp)
	delete(c.mu.aborted, tp)
	c.mu.done.Broadcast()
	c.mu.Unlock()
}

// abort forgets tp (its log is being deleted) and waits until no cleaning pass or
// retention run is working on it (LogCleanerManager.abortCleaning); a pass checks aborted
// between segment groups.
func (c *Cleaner) abort(tp TopicPartition) {
	c.mu.Lock()
	for c.mu.inProgress[tp] {
		c.mu.aborted[tp] = true
		c.mu.done.Wait()
	}
	for _, cp := range c.mu.checkpoints {
		delete(cp, tp)
	}
	c.mu.Unlock()
}

func (c *Cleaner) isAborted(tp TopicPartition) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.aborted[tp]
}

func (c *Cleaner) checkpointOf(dir string, tp TopicPartition) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	off, ok := c.mu.checkpoints[dir][tp]
	return off, ok
}

// checkpointDir writes dir's cleaner-offset-checkpoint with the logs still in it.
func (c *Cleaner) checkpointDir(dir string) bool {
	present := make(map[TopicPartition]bool)
	for _, l := range c.m.onlineLogsByDir()[dir] {
		present[l.TopicPartition()] = true
	}
	c.mu.Lock()
	out := make(map[TopicPartition]int64)
	for tp, off := range c.mu.checkpoints[dir] {
		if present[tp] {
			out[tp] = off
		}
	}
	c.mu.Unlock()
	return c.m.writeDirCheckpoint(dir, CleanerCheckpointFile, out)
}

// logToClean is LogToClean: one compacted log's cleanable range and its dirtiness.
type logToClean struct {
	log                          *Log
	dir                          string
	firstDirty, firstUncleanable int64
	cleanBytes, dirtyBytes       int64
	needCompactionNow            bool
}

func (t logToClean) ratio() float64 {
	if t.cleanBytes+t.dirtyBytes == 0 {
		return 0
	}
	return float64(t.dirtyBytes) / float64(t.cleanBytes+t.dirtyBytes)
}

// cleanableOffsets is LogCleanerManager.cleanableOffsets.
func cleanableOffsets(l compactLog, checkpoint int64, hasCheckpoint bool, nowMs int64) (firstDirty, firstUncleanable int64, needNow bool) {
	cfg := l.Config()
	start, end := l.LogStartOffset(), l.LogEndOffset()
	firstDirty = start
	if hasCheckpoint && checkpoint >= start && checkpoint <= end {
		firstDirty = checkpoint
	}
	segs := l.Segments()
	if len(segs) == 0 {
		return firstDirty, firstDirty, false
	}
	active := segs[len(segs)-1].BaseOffset
	firstUncleanable = min(l.LastStableOffset(), active)
	// LogToClean: the bound is the base of the segment holding it, so no record at or
	// above the LSO (an open transaction) is mapped or rewritten.
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].BaseOffset <= firstUncleanable {
			firstUncleanable = segs[i].BaseOffset
			break
		}
	}
	var dirty []SegmentInfo
	for _, s := range segs[:len(segs)-1] {
		if s.NextOffset > firstDirty && s.BaseOffset < firstUncleanable {
			dirty = append(dirty, s)
		}
	}
	if cfg.MaxCompactionLagMs > 0 && cfg.MaxCompactionLagMs < math.MaxInt64 {
		earliest := int64(math.MaxInt64)
		for _, s := range dirty {
			if s.FirstBatchTimestamp > 0 && s.FirstBatchTimestamp < earliest {
				earliest = s.FirstBatchTimestamp
			}
		}
		needNow = earliest != math.MaxInt64 && nowMs-earliest > cfg.MaxCompactionLagMs
	}
	if cfg.MinCompactionLagMs > 0 {
		for _, s := range dirty {
			if s.LargestTimestamp > nowMs-cfg.MinCompactionLagMs {
				firstUncleanable = min(firstUncleanable, s.BaseOffset)
				break
			}
		}
	}
	if firstUncleanable < firstDirty {
		firstUncleanable = firstDirty
	}
	return firstDirty, firstUncleanable, needNow
}

// grabFilthiestLog is LogCleanerManager.grabFilthiestCompactedLog: the compacted log with
// the highest dirty ratio above min.cleanable.dirty.ratio (or one past
// max.compaction.lag.ms), marked in progress.
func (c *Cleaner) grabFilthiestLog(now time.Time) (logToClean, bool) {
	nowMs := now.UnixMilli()
	var best logToClean
	found, dirtiest := false, 0.0
	for dir, logs := range c.m.onlineLogsByDir() {
		for _, l := range logs {
			cfg := l.Config()
			if !cfg.Compact() || c.m.isFutureLog(l) { // a future log copies the cleaned current one
				continue
			}
			tp := l.TopicPartition()
			c.mu.Lock()
			busy := c.mu.inProgress[tp]
			c.mu.Unlock()
			if busy {
				continue
			}
			cp, ok := c.checkpointOf(dir, tp)
			fd, fu, needNow := cleanableOffsets(l, cp, ok, nowMs)
			t := logToClean{log: l, dir: dir, firstDirty: fd, firstUncleanable: fu, needCompactionNow: needNow}
			for _, s := range l.Segments() {
				if s.Active {
					continue
				}
				switch {
				case s.NextOffset <= fd:
					t.cleanBytes += s.Size
				case s.BaseOffset < fu:
					t.dirtyBytes += s.Size
				}
			}
			dirtiest = max(dirtiest, t.ratio())
			if (t.needCompactionNow && t.dirtyBytes > 0) || (t.dirtyBytes > 0 && t.ratio() > cfg.MinCleanableDirtyRatio) {
				if !found || t.ratio() > best.ratio() {
					best, found = t, true
				}
			}
		}
	}
	c.stats.recordDirtiest(dirtiest) // LogCleanerManager.dirtiestLogCleanableRatio
	if !found || !c.tryPause(best.log.TopicPartition()) {
		return logToClean{}, false
	}
	return best, true
}

// cleanOnce is one iteration of CleanerThread.doWork: clean the filthiest log, then apply
// retention to compact,delete logs.
func (c *Cleaner) cleanOnce() bool {
	now := c.m.clock()
	t, ok := c.grabFilthiestLog(now)
	if !ok {
		return false
	}
	tp := t.log.TopicPartition()
	start := time.Now()
	stats, err := c.clean(t.log, t.dir, now)
	if err == nil && t.log.Config().Delete() {
		_, err = DeleteRetainedSegments(t.log, now)
	}
	c.resume(tp)
	fields := logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}
	if err != nil {
		if !errors.Is(err, ErrKafkaStorage) && !errors.Is(err, ErrClosed) && !errors.Is(err, errCleaningAborted) {
			c.log.WithError(err).WithFields(fields).Warn("log cleaning failed")
			c.stats.recordPass(tp, t.dir, stats, 0, err)
		}
		return false
	}
	c.stats.recordPass(tp, t.dir, stats, time.Since(start), nil)
	c.log.WithFields(fields).WithFields(logrus.Fields{
		"first_dirty": stats.FirstDirty, "end_offset": stats.EndOffset, "bytes_read": stats.BytesRead,
		"bytes_written": stats.BytesWritten, "records_read": stats.RecordsRead, "records_retained": stats.RecordsRetained,
	}).Info("cleaned log")
	return true
}

var errCleaningAborted = errors.New("logstore: cleaning aborted")

// clean cleans l from its checkpointed first dirty offset and checkpoints the new one.
// The caller holds tp in progress.
func (c *Cleaner) clean(l *Log, dir string, now time.Time) (CleanerStats, error) {
	tp := l.TopicPartition()
	cp, ok := c.checkpointOf(dir, tp)
	stats, _, err := compact(throttledLog{l, &c.throttler}, cp, ok, now, c.offsetMapBytes(), func() bool { return c.isAborted(tp) || c.halt.Load() })
	if err != nil {
		return stats, err
	}
	c.mu.Lock()
	if c.mu.checkpoints[dir] == nil {
		c.mu.checkpoints[dir] = make(map[TopicPartition]int64)
	}
	c.mu.checkpoints[dir][tp] = stats.EndOffset
	c.mu.Unlock()
	if !c.checkpointDir(dir) {
		return stats, fmt.Errorf("checkpoint cleaner offsets in %s: %w", dir, ErrKafkaStorage)
	}
	return stats, nil
}

// offsetMap is SkimpyOffsetMap: MD5(key) -> latest offset, with a fixed capacity.
type offsetMap struct {
	m            map[[md5.Size]byte]int64
	capacity     int
	latestOffset int64
}

func newOffsetMap(dedupeBufferSize int64) *offsetMap {
	// 0.9 load factor over 24-byte slots (16-byte digest + 8-byte offset), as Kafka.
	slots := int(float64(dedupeBufferSize) * 0.9 / 24)
	if slots < 1 {
		slots = 1
	}
	return &offsetMap{m: make(map[[md5.Size]byte]int64), capacity: slots, latestOffset: -1}
}

func (o *offsetMap) put(key []byte, offset int64) {
	o.m[md5.Sum(key)] = offset
	o.latestOffset = offset
}

func (o *offsetMap) get(key []byte) (int64, bool) {
	off, ok := o.m[md5.Sum(key)]
	return off, ok
}

// compact runs one cleaning pass over l (Cleaner.doClean). It returns the stats (EndOffset
// is the new first dirty offset) and the earliest delete horizon of retained tombstones
// (0 if none).
func compact(l compactLog, checkpoint int64, hasCheckpoint bool, now time.Time, dedupeBufferSize int64, aborted func() bool) (CleanerStats, int64, error) {
	cfg := l.Config()
	nowMs := now.UnixMilli()
	firstDirty, firstUncleanable, _ := cleanableOffsets(l, checkpoint, hasCheckpoint, nowMs)
	stats := CleanerStats{TopicPartition: l.TopicPartition(), FirstDirty: firstDirty, EndOffset: firstDirty}
	segs := l.Segments()
	if len(segs) < 2 || firstUncleanable <= firstDirty {
		return stats, 0, nil
	}

	// Build the offset map over whole dirty segments until it is full; the map ends on a
	// segment boundary. Also note each producer's last batch (active producer state).
	om := newOffsetMap(dedupeBufferSize)
	endOffset := firstDirty
	mapTxns := newCleanedTxns(l.collectAbortedTransactions(firstDirty, firstUncleanable))
	for _, s := range segs {
		if s.Active || s.BaseOffset >= firstUncleanable || s.NextOffset <= firstDirty {
			continue
		}
		if len(om.m) >= om.capacity {
			break
		}
		err := l.forEachBatch(s.BaseOffset, func(b recordbatch.Batch) error {
			stats.BytesRead += int64(len(b))
			// buildOffsetMapForSegment: markers and aborted data add no keys.
			skip := false
			if b.Control() {
				mapTxns.onControlBatchRead(b)
				skip = true
			} else {
				skip = mapTxns.onBatchRead(b)
			}
			if b.LastOffset() < firstDirty {
				return nil
			}
			if !skip {
				err := b.ForEachRecord(false, func(r *recordbatch.Record) error {
					if r.Key != nil {
						om.put(r.Key, b.BaseOffset()+int64(r.OffsetDelta))
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			om.latestOffset = max(om.latestOffset, b.LastOffset())
			return nil
		})
		if err != nil {
			return stats, 0, fmt.Errorf("build offset map of %s segment %d: %w", l.TopicPartition(), s.BaseOffset, err)
		}
		endOffset = s.NextOffset
	}
	stats.BufferUtilization = float64(len(om.m)) / float64(om.capacity)
	if endOffset <= firstDirty {
		return stats, 0, nil
	}
	lastRecords := l.lastRecordsOfActiveProducers()

	// Group the segments below endOffset so each group fits segment.bytes
	// (groupSegmentsBySize) and its offsets stay int32-relative to the group's base.
	var groups [][]SegmentInfo
	var cur []SegmentInfo
	var curSize int64
	for _, s := range segs {
		if s.Active || s.BaseOffset >= endOffset {
			break
		}
		if len(cur) > 0 && (curSize+s.Size > cfg.SegmentBytes || s.NextOffset-1-cur[0].BaseOffset > math.MaxInt32) {
			groups = append(groups, cur)
			cur, curSize = nil, 0
		}
		cur = append(cur, s)
		curSize += s.Size
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}

	f := recordFilter{
		om: om, nowMs: nowMs, deleteRetentionMs: cfg.DeleteRetentionMs, lastRecords: lastRecords,
		txns: newCleanedTxns(nil),
	}
	for _, g := range groups {
		if aborted != nil && aborted() {
			return stats, 0, errCleaningAborted
		}
		bases := make([]int64, len(g))
		for i, s := range g {
			bases[i] = s.BaseOffset
		}
		err := l.replaceWithCleaned(g[0].BaseOffset, bases, func(write func([]byte) error, index func(AbortedTxn) error) error {
			f.txns.cleanedIndex = index
			defer func() { f.txns.cleanedIndex = nil }()
			for _, s := range g {
				// The aborted transactions overlapping the whole segment: the cleaned
				// segment's .txnindex is rebuilt from them.
				f.txns.add(l.collectAbortedTransactions(s.BaseOffset, s.NextOffset))
				err := l.forEachBatch(s.BaseOffset, func(b recordbatch.Batch) error {
					out, err := f.filter(b, &stats)
					if err != nil || out == nil {
						return err
					}
					stats.BytesWritten += int64(len(out))
					return write(out)
				})
				if err != nil {
					return fmt.Errorf("segment %d: %w", s.BaseOffset, err)
				}
			}
			return f.txns.err
		})
		if err != nil {
			return stats, 0, fmt.Errorf("clean %s segments %v: %w", l.TopicPartition(), bases, err)
		}
		stats.Groups++
	}
	stats.EndOffset = endOffset
	return stats, f.earliestHorizon, nil
}

// recordFilter is the cleaner's RecordFilter for MemoryRecords.filterTo (Cleaner.cleanInto).
type recordFilter struct {
	om                *offsetMap
	nowMs             int64
	deleteRetentionMs int64
	lastRecords       map[int64]lastRecord
	txns              *cleanedTxns
	earliestHorizon   int64
}

// isLastRecordOfProducer: the batch holds an active producer's last data offset, or is
// its last marker when it has no data left (the epoch it carries fences zombies).
func (f *recordFilter) isLastRecordOfProducer(b recordbatch.Batch) bool {
	lr, ok := f.lastRecords[b.ProducerID()]
	if !ok {
		return false
	}
	if lr.lastDataOffset >= 0 {
		return b.LastOffset() == lr.lastDataOffset
	}
	return b.Control() && b.ProducerEpoch() == lr.epoch
}

// filter returns the batch to write for b: b itself when every record stays and no
// delete horizon must be set, a rebuilt batch with the retained records, an empty batch
// kept for producer state, or nil to drop it (checkBatchRetention + filterTo).
func (f *recordFilter) filter(b recordbatch.Batch, stats *CleanerStats) ([]byte, error) {
	horizon, hasHorizon := b.DeleteHorizon()
	var canDiscard, discardRecords bool
	if b.Control() {
		canDiscard = f.txns.onControlBatchRead(b)
		// Markers ride on the tombstone horizon: removed only once it has passed.
		discardRecords = canDiscard && hasHorizon && horizon <= f.nowMs
	} else {
		canDiscard = f.txns.onBatchRead(b)
		discardRecords = canDiscard
	}
	retainEmpty := b.ProducerID() >= 0 && f.isLastRecordOfProducer(b)
	if discardRecords && !retainEmpty {
		stats.RecordsRead += int64(b.RecordCount())
		return nil, nil // BatchRetention.DELETE
	}
	markerForEmptyTxn := canDiscard && b.Control()
	retainDeletes := !hasHorizon || f.nowMs < horizon
	baseTs := b.BaseTimestamp()
	var kept []recordbatch.Record
	var keptTs []int64
	total := 0
	tombstones := false
	err := b.ForEachRecord(true, func(r *recordbatch.Record) error {
		total++
		stats.RecordsRead++
		off := b.BaseOffset() + int64(r.OffsetDelta)
		if discardRecords {
			return nil
		}
		if !b.Control() && !f.retain(r, off, retainDeletes, stats) {
			return nil
		}
		rec := *r
		rec.Key, rec.Value = cloneBytes(r.Key), cloneBytes(r.Value)
		if r.Value == nil {
			tombstones = true
		}
		hs := make([]recordbatch.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = recordbatch.RecordHeader{Key: h.Key, Value: cloneBytes(h.Value)}
		}
		rec.Headers = hs
		kept = append(kept, rec)
		keptTs = append(keptTs, baseTs+r.TimestampDelta)
		return nil
	})
	if err != nil {
		return nil, err
	}
	stats.RecordsRetained += int64(len(kept))
	if len(kept) == 0 {
		if retainEmpty {
			return emptyBatch(b), nil // RETAIN_EMPTY: keeps the producer's last sequence and epoch
		}
		return nil, nil
	}
	needHorizon := (tombstones || markerForEmptyTxn) && !hasHorizon
	if len(kept) == total && !needHorizon {
		if (tombstones || markerForEmptyTxn) && hasHorizon {
			f.noteHorizon(horizon)
		}
		return append([]byte(nil), b...), nil
	}
	h := b.Header()
	newHorizon := int64(-1)
	switch {
	case needHorizon:
		newHorizon = f.nowMs + f.deleteRetentionMs
	case hasHorizon && (tombstones || markerForEmptyTxn):
		newHorizon = horizon
	}
	// MemoryRecordsBuilder: baseTimestamp is the first record's timestamp, or the delete
	// horizon when one is set; deltas are relative to it. The last offset is kept.
	if newHorizon >= 0 {
		h.BaseTimestamp = newHorizon
		h.Attributes |= recordbatch.AttrDeleteHorizon
		f.noteHorizon(newHorizon)
	} else {
		h.BaseTimestamp = keptTs[0]
		h.Attributes &^= recordbatch.AttrDeleteHorizon
	}
	if !b.LogAppendTime() {
		h.MaxTimestamp = -1
		for _, ts := range keptTs {
			h.MaxTimestamp = max(h.MaxTimestamp, ts)
		}
	}
	for i := range kept {
		kept[i].TimestampDelta = keptTs[i] - h.BaseTimestamp
	}
	nb, err := recordbatch.Build(h, kept, b.Codec())
	if err != nil {
		return nil, fmt.Errorf("rebuild batch at offset %d: %w", b.BaseOffset(), err)
	}
	return nb, nil
}

// retain is the cleaner's shouldRetainRecord.
func (f *recordFilter) retain(r *recordbatch.Record, off int64, retainDeletes bool, stats *CleanerStats) bool {
	if off > f.om.latestOffset {
		return true
	}
	if r.Key == nil {
		return false // invalid on a compacted topic; Kafka's cleaner drops it too
	}
	found, ok := f.om.get(r.Key)
	if ok && off < found {
		return false
	}
	if r.Value == nil && !retainDeletes {
		stats.TombstonesDropped++
		return false
	}
	return true
}

func (f *recordFilter) noteHorizon(h int64) {
	if f.earliestHorizon == 0 || h < f.earliestHorizon {
		f.earliestHorizon = h
	}
}

// emptyBatch is DefaultRecordBatch.writeEmptyHeader: same offsets and producer fields, no
// records, baseTimestamp -1, maxTimestamp kept.
func emptyBatch(b recordbatch.Batch) []byte {
	h := b.Header()
	h.Attributes &^= 0x07 | recordbatch.AttrDeleteHorizon
	h.BaseTimestamp = -1
	h.RecordCount = 0
	out := recordbatch.AppendHeader(nil, h, 0)
	recordbatch.Batch(out).SetCRC()
	return out
}

// cloneBytes copies b, keeping nil (null) apart from empty.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// cleanedTxns is Kafka's CleanedTransactionMetadata: the transaction state of one cleaning
// pass, fed with the aborted transactions of the .txnindex files as the pass reaches them.
// It decides which data batches belong to aborted transactions and which markers may go,
// and writes the aborted transactions whose markers stay to the cleaned segment's index.
type cleanedTxns struct {
	// aborted are the known aborted transactions not yet reached, by first offset.
	aborted          []AbortedTxn
	ongoingCommitted map[int64]bool
	ongoingAborted   map[int64]*abortedTxnState
	cleanedIndex     func(AbortedTxn) error
	err              error
}

type abortedTxnState struct {
	txn AbortedTxn
	// sawData: this pass read a batch of the transaction.
	sawData bool
}

func newCleanedTxns(aborted []AbortedTxn) *cleanedTxns {
	t := &cleanedTxns{ongoingCommitted: map[int64]bool{}, ongoingAborted: map[int64]*abortedTxnState{}}
	t.add(aborted)
	return t
}

// add is addAbortedTransactions.
func (t *cleanedTxns) add(txns []AbortedTxn) {
	t.aborted = append(t.aborted, txns...)
	sort.SliceStable(t.aborted, func(i, j int) bool { return t.aborted[i].FirstOffset < t.aborted[j].FirstOffset })
}

// consumeUpTo is consumeAbortedTxnsUpTo.
func (t *cleanedTxns) consumeUpTo(offset int64) {
	n := 0
	for n < len(t.aborted) && t.aborted[n].FirstOffset <= offset {
		a := t.aborted[n]
		if _, ok := t.ongoingAborted[a.ProducerID]; !ok {
			t.ongoingAborted[a.ProducerID] = &abortedTxnState{txn: a}
		}
		n++
	}
	t.aborted = t.aborted[n:]
}

// onControlBatchRead reports whether the marker may be discarded.
func (t *cleanedTxns) onControlBatchRead(b recordbatch.Batch) bool {
	t.consumeUpTo(b.LastOffset())
	m, ok, err := parseEndTxnMarker(b)
	if err != nil || !ok {
		// An empty control batch was cleaned already; one that is not a marker (appends and
		// recovery refuse them, but an older log may hold one) is kept as it is.
		return b.RecordCount() == 0
	}
	pid := b.ProducerID()
	if !m.commit {
		st, ok := t.ongoingAborted[pid]
		delete(t.ongoingAborted, pid)
		if ok && st.sawData {
			// Retain the marker until all batches of the transaction are gone.
			if t.cleanedIndex != nil && t.err == nil {
				t.err = t.cleanedIndex(st.txn)
			}
			return false
		}
		return true
	}
	// A commit marker may go if this pass saw no batch of its transaction.
	saw := t.ongoingCommitted[pid]
	delete(t.ongoingCommitted, pid)
	return !saw
}

// onBatchRead reports whether a data batch belongs to an aborted transaction.
func (t *cleanedTxns) onBatchRead(b recordbatch.Batch) bool {
	t.consumeUpTo(b.LastOffset())
	if !b.Transactional() {
		return false
	}
	if st, ok := t.ongoingAborted[b.ProducerID()]; ok {
		st.sawData = true
		return true
	}
	t.ongoingCommitted[b.ProducerID()] = true
	return false
}
