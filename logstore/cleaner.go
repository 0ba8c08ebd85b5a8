package logstore

// Log compaction, mirroring Kafka's LogCleaner, LogCleanerManager and Cleaner
// (core/src/main/scala/kafka/log/LogCleaner.scala, LogCleanerManager.scala) and the
// record filter of MemoryRecords.filterTo.
//
// One pass over a log:
//  1. cleanable range [firstDirty, firstUncleanable): firstDirty from cleaner-offset-checkpoint
//     (reset to the log start when out of range); firstUncleanable = min(last stable offset
//     (the high watermark here), active segment base, first segment younger than
//     min.compaction.lag.ms).
//  2. offset map: MD5(key) -> latest offset over the dirty segments, bounded by
//     log.cleaner.dedupe.buffer.size at a 0.9 load factor (SkimpyOffsetMap's 24-byte slots).
//  3. every segment from the log start up to the end of the map is rewritten, in groups
//     that fit segment.bytes, keeping a record iff it is past the map or it is its key's
//     latest and (has a value, or is a tombstone still inside its delete horizon).
//     Batches keep their base and last offsets (holes appear), their producer fields and
//     codec. A retained batch with tombstones gets the KIP-534 delete horizon
//     (now + delete.retention.ms); a later pass after the horizon drops them.
//  4. the group is written as <base>.log.cleaned, renamed .swap and swapped in by the Log
//     (old segments become .deleted); then firstDirty = end of the map is checkpointed.
//
// Deviations (README): aborted transactions and transaction markers are kept as they are
// (samsa has no transactions yet); only the batch holding an idempotent producer's last
// offset is kept when empty.

import (
	"crypto/md5"
	"errors"
	"fmt"
	"math"
	"path/filepath"
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
	Segments() []SegmentInfo
	// forEachBatch calls fn for every batch of the segment with that base offset.
	forEachBatch(segBase int64, fn func(b recordbatch.Batch) error) error
	// replaceWithCleaned writes a new segment with base offset base from the batches that
	// emit hands to write, and swaps it in for the segments whose bases are oldBases,
	// crash-safely (.cleaned -> .swap -> rename).
	replaceWithCleaned(base int64, oldBases []int64, emit func(write func(batch []byte) error) error) error
}

// CleanerStats is what one cleaning pass did (Kafka's CleanerStats, trimmed).
type CleanerStats struct {
	TopicPartition               TopicPartition
	FirstDirty, EndOffset        int64
	BytesRead, BytesWritten      int64
	RecordsRead, RecordsRetained int64
	TombstonesDropped            int64
	Groups                       int
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
	firstUncleanable = min(l.HighWatermark(), active) // LSO = HW without transactions
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
	found := false
	for dir, logs := range c.m.onlineLogsByDir() {
		for _, l := range logs {
			cfg := l.Config()
			if !cfg.Compact() {
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
			if (t.needCompactionNow && t.dirtyBytes > 0) || (t.dirtyBytes > 0 && t.ratio() > cfg.MinCleanableDirtyRatio) {
				if !found || t.ratio() > best.ratio() {
					best, found = t, true
				}
			}
		}
	}
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
	stats, err := c.clean(t.log, t.dir, now)
	if err == nil && t.log.Config().Delete() {
		_, err = DeleteRetainedSegments(t.log, now)
	}
	c.resume(tp)
	fields := logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}
	if err != nil {
		if !errors.Is(err, ErrKafkaStorage) && !errors.Is(err, ErrClosed) && !errors.Is(err, errCleaningAborted) {
			c.log.WithError(err).WithFields(fields).Warn("log cleaning failed")
		}
		return false
	}
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
	stats, _, err := compact(l, cp, ok, now, c.m.cfg.CleanerDedupeBufferSize, func() bool { return c.isAborted(tp) })
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
	for _, s := range segs {
		if s.Active || s.BaseOffset >= firstUncleanable || s.NextOffset <= firstDirty {
			continue
		}
		if len(om.m) >= om.capacity {
			break
		}
		err := l.forEachBatch(s.BaseOffset, func(b recordbatch.Batch) error {
			stats.BytesRead += int64(len(b))
			if b.LastOffset() < firstDirty || b.Control() {
				return nil
			}
			return b.ForEachRecord(false, func(r *recordbatch.Record) error {
				if r.Key != nil {
					om.put(r.Key, b.BaseOffset()+int64(r.OffsetDelta))
				}
				return nil
			})
		})
		if err != nil {
			return stats, 0, fmt.Errorf("build offset map of %s segment %d: %w", l.TopicPartition(), s.BaseOffset, err)
		}
		endOffset = s.NextOffset
	}
	if endOffset <= firstDirty {
		return stats, 0, nil
	}
	lastOfProducer := make(map[int64]int64)
	for _, s := range segs {
		err := l.forEachBatch(s.BaseOffset, func(b recordbatch.Batch) error {
			if pid := b.ProducerID(); pid >= 0 && !b.Control() {
				lastOfProducer[pid] = b.LastOffset()
			}
			return nil
		})
		if err != nil {
			return stats, 0, fmt.Errorf("scan producers of %s: %w", l.TopicPartition(), err)
		}
	}

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
		om: om, nowMs: nowMs, deleteRetentionMs: cfg.DeleteRetentionMs, lastOfProducer: lastOfProducer,
	}
	for _, g := range groups {
		if aborted != nil && aborted() {
			return stats, 0, errCleaningAborted
		}
		bases := make([]int64, len(g))
		for i, s := range g {
			bases[i] = s.BaseOffset
		}
		err := l.replaceWithCleaned(g[0].BaseOffset, bases, func(write func([]byte) error) error {
			for _, s := range g {
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
			return nil
		})
		if err != nil {
			return stats, 0, fmt.Errorf("clean %s segments %v: %w", l.TopicPartition(), bases, err)
		}
		stats.Groups++
	}
	stats.EndOffset = endOffset
	return stats, f.earliestHorizon, nil
}

// recordFilter is the cleaner's RecordFilter for MemoryRecords.filterTo.
type recordFilter struct {
	om                *offsetMap
	nowMs             int64
	deleteRetentionMs int64
	lastOfProducer    map[int64]int64
	earliestHorizon   int64
}

// filter returns the batch to write for b: b itself when every record stays and no
// delete horizon must be set, a rebuilt batch with the retained records, an empty batch
// kept for producer state, or nil to drop it.
func (f *recordFilter) filter(b recordbatch.Batch, stats *CleanerStats) ([]byte, error) {
	if b.Control() {
		return append([]byte(nil), b...), nil // transaction markers are kept (see the file comment)
	}
	horizon, hasHorizon := b.DeleteHorizon()
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
		if !f.retain(r, off, retainDeletes, stats) {
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
		if pid := b.ProducerID(); pid >= 0 && f.lastOfProducer[pid] == b.LastOffset() {
			return emptyBatch(b), nil // RETAIN_EMPTY: keeps the producer's last sequence
		}
		return nil, nil
	}
	needHorizon := tombstones && !hasHorizon
	if len(kept) == total && !needHorizon {
		if tombstones && hasHorizon {
			f.noteHorizon(horizon)
		}
		return append([]byte(nil), b...), nil
	}
	h := b.Header()
	newHorizon := int64(-1)
	switch {
	case needHorizon:
		newHorizon = f.nowMs + f.deleteRetentionMs
	case hasHorizon && tombstones:
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
