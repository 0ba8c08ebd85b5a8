package broker

// replica_alter_log_dirs.go mirrors Kafka's ReplicaAlterLogDirsManager and
// ReplicaAlterLogDirsThread with its LocalLeaderEndPoint (KIP-113): the threads that move a
// replica between the log dirs of this broker. A partition with a future log (created by
// AlterReplicaLogDirs, or found at start-up) is copied from its current log, batch for
// batch with the current log's offsets, until both end at the same offset; then, with the
// partition's appends stopped, the future log replaces the current one
// (Partition.maybeReplaceCurrentWithFutureReplica) and the old dir is deleted.
//
//   - num.replica.alter.log.dirs.threads threads (unset: one per log dir); a partition goes
//     to thread abs(31*hash(topic)+partition) % threads. A thread copies one partition at a
//     time, in topic-partition order (LocalLeaderEndPoint.selectPartitionToFetch), up to
//     replica.fetch.max.bytes per round, reading to the log end (FetchIsolation.LOG_END).
//   - replica.alter.log.dirs.io.max.bytes.per.second (per-broker dynamic config) bounds the
//     copy rate: while it is exceeded a thread waits replica.fetch.backoff.ms.
//   - A new or reloaded future log first truncates to what it shares with the current log, by
//     leader epochs (ReplicaAlterLogDirsThread.truncate); a truncation of the current log
//     (follower truncation) is passed on (markPartitionsForTruncation).
//   - Deviation: when the future log is a single round behind, the last round is copied with
//     the partition's appends stopped, so a move finishes under a steady producer (Kafka
//     retries until an idle moment).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

// futureLogManager is the part of logstore.Manager log-dir moves use.
type futureLogManager interface {
	IsLogDirOnline(dir string) (bool, error)
	MaybeUpdatePreferredLogDir(tp logstore.TopicPartition, dir string)
	GetFutureLog(tp logstore.TopicPartition) (*logstore.Log, bool)
	FutureLogs() []*logstore.Log
	CreateFutureLog(tp logstore.TopicPartition, topicID [16]byte, cfg logstore.LogConfig, dir string) (*logstore.Log, bool, error)
	DeleteFutureLog(tp logstore.TopicPartition) error
	ReplaceCurrentWithFutureLog(tp logstore.TopicPartition) (*logstore.Log, error)
}

var _ futureLogManager = (*logstore.Manager)(nil)

// alterLogDirsManager is ReplicaAlterLogDirsManager. Safe for concurrent use.
type alterLogDirsManager struct {
	rm        *ReplicaManager
	log       *logrus.Entry
	quota     *ReplicationQuotaManager // AlterLogDirsReplication
	fetchSize int32                    // replica.fetch.max.bytes
	backoff   time.Duration            // replica.fetch.backoff.ms
	threads   []*alterLogDirsThread

	// marks are truncations of current logs not yet applied to their future logs, by
	// partition: the offset, and whether it was a full truncation (start at the offset).
	// active are the partitions the threads move. Both under markMu, never held long, so a
	// follower's truncation does not wait for a copy round.
	markMu sync.Mutex
	marks  map[logstore.TopicPartition]truncationMark
	active map[logstore.TopicPartition]bool
}

type truncationMark struct {
	offset int64
	full   bool
}

// moveState is one partition's PartitionFetchState in a thread.
type moveState struct {
	p          *Partition
	truncating bool // the epoch truncation is still to do (a new or reloaded future log)
	delayUntil time.Time
}

// alterLogDirsThread is one ReplicaAlterLogDirsThread. mu is held across a round of
// copying (Kafka's partitionMapLock), so removing a partition waits for its round.
type alterLogDirsThread struct {
	id   int
	m    *alterLogDirsManager
	log  *logrus.Entry
	wake chan struct{}

	mu         sync.Mutex
	parts      map[logstore.TopicPartition]*moveState
	inProgress *logstore.TopicPartition
}

func newAlterLogDirsManager(rm *ReplicaManager) *alterLogDirsManager {
	fc := rm.fetcherConfig()
	fc.defaults()
	var props map[string]string
	n := 1
	if c := rm.cfg.Config; c != nil {
		props = c.Props
		n = max(len(c.LogDirs), 1)
		if v, ok := c.Props["num.replica.alter.log.dirs.threads"]; ok && strings.TrimSpace(v) != "" {
			if k, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && k > 0 {
				n = k
			}
		}
	}
	m := &alterLogDirsManager{rm: rm, log: rm.log.WithField("component", "replica.alter.log.dirs"),
		fetchSize: fc.MaxBytes, backoff: fc.Backoff, marks: map[logstore.TopicPartition]truncationMark{},
		active: map[logstore.TopicPartition]bool{}}
	windows := int(propInt(props, "alter.log.dirs.replication.quota.window.num", 11))
	window := time.Duration(propInt(props, "alter.log.dirs.replication.quota.window.size.seconds", 1)) * time.Second
	m.quota = newReplicationQuotaManager("AlterLogDirsReplication", rm.cfg.BrokerID, windows, window, nil, rm.cfg.Now, m.log)
	m.registerQuota(rm.cfg.Config, rm.cfg.DynamicConfig)
	for i := 0; i < n; i++ {
		m.threads = append(m.threads, &alterLogDirsThread{id: i, m: m, wake: make(chan struct{}, 1),
			log:   m.log.WithField("thread", "ReplicaAlterLogDirsThread-"+strconv.Itoa(i)),
			parts: map[logstore.TopicPartition]*moveState{}})
	}
	return m
}

// start runs the threads until ctx ends (ReplicaManager.shutdown waits for them).
func (m *alterLogDirsManager) start(ctx context.Context, wg *sync.WaitGroup) {
	for _, t := range m.threads {
		wg.Add(1)
		go func(t *alterLogDirsThread) {
			defer wg.Done()
			t.run(ctx)
		}(t)
	}
}

// threadFor is AbstractFetcherManager.getFetcherId with Java's String.hashCode.
func (m *alterLogDirsManager) threadFor(tp logstore.TopicPartition) *alterLogDirsThread {
	var h int32
	for _, r := range tp.Topic {
		if r >= 0x10000 { // a UTF-16 surrogate pair, as Java hashes it
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	v := 31*h + tp.Partition
	if v == math.MinInt32 { // Utils.abs
		v = 0
	} else if v < 0 {
		v = -v
	}
	return m.threads[int(v)%len(m.threads)]
}

// addPartition starts (or keeps) moving p's future log; the first round truncates it by
// leader epochs (addFetcherForPartitions with the future log's high watermark).
func (m *alterLogDirsManager) addPartition(p *Partition) {
	t := m.threadFor(p.tp)
	t.mu.Lock()
	if _, ok := t.parts[p.tp]; !ok {
		t.parts[p.tp] = &moveState{p: p, truncating: true}
		m.markMu.Lock()
		m.active[p.tp] = true
		m.markMu.Unlock()
	}
	t.mu.Unlock()
	t.signal()
}

// removePartitions stops moving tps (removeFetcherForPartitions), waiting for a round in
// progress; their future logs stay where they are.
func (m *alterLogDirsManager) removePartitions(tps ...logstore.TopicPartition) {
	for _, tp := range tps {
		t := m.threadFor(tp)
		t.mu.Lock()
		delete(t.parts, tp)
		if t.inProgress != nil && *t.inProgress == tp {
			t.inProgress = nil
		}
		m.forget(tp)
		t.mu.Unlock()
	}
}

// forget drops tp's truncation mark and active flag. Callers hold its thread's mu.
func (m *alterLogDirsManager) forget(tp logstore.TopicPartition) {
	m.markMu.Lock()
	delete(m.marks, tp)
	delete(m.active, tp)
	m.markMu.Unlock()
}

// moving reports whether a thread is moving tp.
func (m *alterLogDirsManager) moving(tp logstore.TopicPartition) bool {
	m.markMu.Lock()
	defer m.markMu.Unlock()
	return m.active[tp]
}

// markForTruncation is markPartitionsForTruncation: tp's current log was truncated at
// offset (full: emptied and restarted there), so its future log must drop what lies beyond.
// The follower calls it after the truncation and before its next append.
func (m *alterLogDirsManager) markForTruncation(tp logstore.TopicPartition, offset int64, full bool) {
	m.markMu.Lock()
	if !m.active[tp] {
		m.markMu.Unlock()
		return
	}
	// Two truncations before a round: a full one last wins; else the lower offset, full if
	// the earlier one was.
	if prev, ok := m.marks[tp]; ok && !full {
		offset, full = min(offset, prev.offset), prev.full
	}
	m.marks[tp] = truncationMark{offset: offset, full: full}
	m.markMu.Unlock()
}

func (m *alterLogDirsManager) takeMark(tp logstore.TopicPartition) (truncationMark, bool) {
	m.markMu.Lock()
	defer m.markMu.Unlock()
	mk, ok := m.marks[tp]
	delete(m.marks, tp)
	return mk, ok
}

func (m *alterLogDirsManager) hasMark(tp logstore.TopicPartition) bool {
	m.markMu.Lock()
	defer m.markMu.Unlock()
	_, ok := m.marks[tp]
	return ok
}

func (t *alterLogDirsThread) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *alterLogDirsThread) run(ctx context.Context) {
	for ctx.Err() == nil {
		wait := t.doWork()
		if wait == 0 {
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-t.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// doWork runs one round for the selected partition and returns how long to wait before
// the next (0: at once).
func (t *alterLogDirsThread) doWork() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.parts) == 0 {
		return time.Hour // until a partition is added
	}
	if t.m.quota.IsQuotaExceeded() { // LocalLeaderEndPoint.buildFetch
		return t.m.backoff
	}
	st := t.selectLocked()
	if st == nil {
		return t.m.backoff
	}
	done, err := t.round(st)
	switch {
	case err != nil:
		t.log.WithError(err).WithFields(logrus.Fields{"topic": st.p.tp.Topic, "partition": st.p.tp.Partition}).
			Warn("error moving the replica between log dirs; backing off")
		st.delayUntil = time.Now().Add(t.m.backoff)
		if errors.Is(err, errMoveAbandoned) {
			delete(t.parts, st.p.tp)
			t.m.forget(st.p.tp)
			t.inProgress = nil
		}
	case done:
		delete(t.parts, st.p.tp)
		t.m.forget(st.p.tp)
		t.inProgress = nil
	}
	return 0
}

// selectLocked is selectPartitionToFetch: the partition in progress while it is ready,
// else the first ready one by topic and partition.
func (t *alterLogDirsThread) selectLocked() *moveState {
	now := time.Now()
	if t.inProgress != nil {
		if st, ok := t.parts[*t.inProgress]; ok && !now.Before(st.delayUntil) {
			return st
		}
	}
	t.inProgress = nil
	tps := make([]logstore.TopicPartition, 0, len(t.parts))
	for tp, st := range t.parts {
		if !now.Before(st.delayUntil) {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		return nil
	}
	sort.Slice(tps, func(i, j int) bool {
		return tps[i].Topic < tps[j].Topic || tps[i].Topic == tps[j].Topic && tps[i].Partition < tps[j].Partition
	})
	tp := tps[0]
	t.inProgress = &tp
	st := t.parts[tp]
	t.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "remaining": len(t.parts)}).
		Info("beginning/resuming copy of partition between log dirs")
	return st
}

// errMoveAbandoned ends a move: the partition, its log or its future log is gone.
var errMoveAbandoned = errors.New("log-dir move abandoned")

// round copies one chunk of st's current log into its future log and, when they end at the
// same offset, replaces the current log with the future one (processPartitionData then
// maybeReplaceCurrentWithFutureReplica). It reports whether the move is done.
func (t *alterLogDirsThread) round(st *moveState) (bool, error) {
	fl, ok := t.m.rm.cfg.Logs.(futureLogManager)
	if !ok {
		return false, errMoveAbandoned
	}
	tp := st.p.tp
	cur := st.p.Log()
	fut, ok := fl.GetFutureLog(tp)
	if cur == nil || !ok || t.m.rm.cfg.Logs.LogDirOffline(tp) {
		return false, fmt.Errorf("%s: current or future log gone or offline: %w", tp, errMoveAbandoned)
	}
	if err := t.applyTruncation(st, cur, fut); err != nil {
		return false, err
	}
	full, err := t.copyChunk(cur, fut)
	if err != nil {
		return false, err
	}
	if full {
		return false, nil // more to copy: next round
	}
	return t.m.rm.maybeReplaceCurrentWithFutureLog(st.p, cur, t.copyChunk)
}

// applyTruncation makes the future log a prefix of the current one: by leader epochs for a
// new or reloaded future log, else by the truncations marked since the last round.
func (t *alterLogDirsThread) applyTruncation(st *moveState, cur, fut *logstore.Log) error {
	if mk, ok := t.m.takeMark(st.p.tp); ok {
		var err error
		if mk.full {
			err = fut.TruncateFullyAndStartAt(mk.offset)
		} else if mk.offset < fut.LogEndOffset() {
			err = fut.TruncateTo(mk.offset)
			fut.UpdateHighWatermark(min(fut.HighWatermark(), mk.offset))
		}
		if err != nil {
			return fmt.Errorf("truncate future log of %s to %d: %w", st.p.tp, mk.offset, err)
		}
	}
	if !st.truncating {
		return nil
	}
	for i := 0; i < 64; i++ {
		off, complete := futureTruncationOffset(cur, fut)
		if off < fut.LogEndOffset() || complete {
			if err := fut.TruncateTo(off); err != nil {
				return fmt.Errorf("truncate future log of %s to %d: %w", st.p.tp, off, err)
			}
		}
		if complete {
			break
		}
	}
	st.truncating = false
	return nil
}

// futureTruncationOffset is AbstractFetcherThread.getOffsetTruncationState with the
// current log as leader: where the future log stops sharing the current log's history.
func futureTruncationOffset(cur, fut *logstore.Log) (int64, bool) {
	leo := fut.LogEndOffset()
	epoch, ok := fut.LatestEpoch()
	if !ok {
		return min(fut.HighWatermark(), leo), true
	}
	curEpoch, curEnd := cur.EndOffsetForEpoch(epoch)
	if curEnd < 0 {
		return min(fut.HighWatermark(), leo), true
	}
	if curEpoch < 0 {
		return min(curEnd, leo), true
	}
	futEpoch, futEnd := fut.EndOffsetForEpoch(curEpoch)
	if futEnd < 0 {
		return min(curEnd, leo), true
	}
	if futEpoch != curEpoch {
		return min(futEnd, leo), false
	}
	return min(futEnd, curEnd, leo), true
}

// copyChunk reads up to replica.fetch.max.bytes of the current log from the future log's end
// and appends it there with the same offsets (LocalLeaderEndPoint.fetch +
// appendRecordsToFollowerOrFutureReplica), then passes on the high watermark and log start
// offset. full reports that the read stopped before the current log's end.
func (t *alterLogDirsThread) copyChunk(cur, fut *logstore.Log) (full bool, err error) {
	tp := cur.TopicPartition()
	offset := fut.LogEndOffset()
	switch start, end := cur.LogStartOffset(), cur.LogEndOffset(); {
	case offset < start: // out of range below: start over at the current log's start
		if err := fut.TruncateFullyAndStartAt(start); err != nil {
			return false, fmt.Errorf("restart future log of %s at %d: %w", tp, start, err)
		}
		offset = start
	case offset > end: // the current log was cut below us
		if err := fut.TruncateTo(end); err != nil {
			return false, fmt.Errorf("truncate future log of %s to %d: %w", tp, end, err)
		}
		offset = end
	}
	end := cur.LogEndOffset()
	info, err := cur.Read(offset, t.m.fetchSize, math.MaxInt64, true)
	if err != nil {
		if errors.Is(err, logstore.ErrOffsetOutOfRange) {
			return true, nil // moved under us: the next round re-checks the range
		}
		return false, fmt.Errorf("read %s at %d: %w", tp, offset, err)
	}
	data, err := info.Bytes()
	if err != nil {
		return false, fmt.Errorf("read %s at %d: %w", tp, offset, err)
	}
	if len(data) > 0 {
		if err := appendToFuture(fut, data); err != nil {
			return false, err
		}
		t.m.quota.Record(int64(len(data)))
	}
	fut.UpdateHighWatermark(cur.HighWatermark())
	if s := cur.LogStartOffset(); s > fut.LogStartOffset() && s <= fut.HighWatermark() {
		if err := fut.MaybeIncrementLogStartOffset(s); err != nil {
			return false, fmt.Errorf("move the future log start of %s to %d: %w", tp, s, err)
		}
	}
	return fut.LogEndOffset() < end, nil
}

// appendToFuture appends fetched batches to the future log; a first batch that starts below
// an empty log's start (the current log's start fell inside it) restarts the log at the
// batch, as Partition.appendRecordsToFollowerOrFutureReplica does.
func appendToFuture(fut *logstore.Log, data []byte) error {
	_, err := fut.AppendAsFollower(data)
	if errors.Is(err, logstore.ErrUnexpectedAppendOffset) {
		b, _, perr := recordbatch.Next(data)
		leo := fut.LogEndOffset()
		if perr == nil && leo == fut.LogStartOffset() && b.BaseOffset() < leo && b.LastOffset() >= leo {
			if err := fut.TruncateFullyAndStartAt(b.BaseOffset()); err != nil {
				return fmt.Errorf("restart future log of %s at %d: %w", fut.TopicPartition(), b.BaseOffset(), err)
			}
			_, err = fut.AppendAsFollower(data)
		}
	}
	if err != nil {
		return fmt.Errorf("append to future log of %s: %w", fut.TopicPartition(), err)
	}
	return nil
}

// maybeReplaceCurrentWithFutureLog is Partition.maybeReplaceCurrentWithFutureReplica: with
// the partition's appends stopped (its write lock), the last chunk is copied if need be, and
// if the future log then ends where the current one does, it replaces it.
func (rm *ReplicaManager) maybeReplaceCurrentWithFutureLog(p *Partition, cur *logstore.Log, copyChunk func(cur, fut *logstore.Log) (bool, error)) (bool, error) {
	fl := rm.cfg.Logs.(futureLogManager)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.log != cur {
		return false, nil // replaced or detached meanwhile: the next round looks again
	}
	fut, ok := fl.GetFutureLog(p.tp)
	if !ok {
		return false, fmt.Errorf("%s: future log gone: %w", p.tp, errMoveAbandoned)
	}
	if fut.LogEndOffset() != cur.LogEndOffset() {
		if full, err := copyChunk(cur, fut); err != nil || full {
			return false, err
		}
	}
	if rm.alterLogDirs.hasMark(p.tp) || fut.LogEndOffset() != cur.LogEndOffset() {
		return false, nil
	}
	nl, err := fl.ReplaceCurrentWithFutureLog(p.tp)
	if err != nil {
		return false, fmt.Errorf("replace the current log of %s with its future log: %w", p.tp, err)
	}
	p.mu.log = nl
	rm.log.WithFields(logrus.Fields{"topic": p.tp.Topic, "partition": p.tp.Partition, "dir": nl.Dir(),
		"log_end_offset": nl.LogEndOffset()}).Info("replica moved to its new log dir")
	return true, nil
}

// maybeAddLogDirFetchers is ReplicaManager.maybeAddLogDirFetchers: after LeaderAndIsr, a
// hosted partition with a future log (left by a move before a restart) resumes moving.
func (rm *ReplicaManager) maybeAddLogDirFetchers(tps []logstore.TopicPartition) {
	fl, ok := rm.cfg.Logs.(futureLogManager)
	if !ok {
		return
	}
	for _, tp := range tps {
		if _, ok := fl.GetFutureLog(tp); !ok {
			continue
		}
		rm.mu.RLock()
		p := rm.partitions[tp]
		rm.mu.RUnlock()
		if p != nil && p.Log() != nil {
			rm.alterLogDirs.addPartition(p)
		}
	}
}

// alterLogDirsQuota applies replica.alter.log.dirs.io.max.bytes.per.second live, from the
// per-broker dynamic configs as BrokerConfigHandler does (Long.MaxValue when unset).
type alterLogDirsQuota struct {
	q       *ReplicationQuotaManager
	dynamic *DynamicBrokerConfig
	log     *logrus.Entry
}

var _ Reconfigurable = (*alterLogDirsQuota)(nil)

func (a *alterLogDirsQuota) ReconfigurableConfigs() []string {
	return []string{config.ReplicaAlterLogDirsIOMaxBytesPerSecond}
}

func (a *alterLogDirsQuota) ValidateReconfiguration(newCfg *config.Config) error {
	k := config.ReplicaAlterLogDirsIOMaxBytesPerSecond
	if v, ok := newCfg.Props[k]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil || n < 0 {
			return fmt.Errorf("Invalid value %s for configuration %s: must be a long at least 0", v, k)
		}
	}
	return nil
}

func (a *alterLogDirsQuota) Reconfigure(_, newCfg *config.Config) { a.apply(newCfg) }

func (a *alterLogDirsQuota) apply(cfg *config.Config) {
	props := cfg.Props
	if a.dynamic != nil {
		_, _, props = a.dynamic.Layers()
	}
	rate := int64(math.MaxInt64)
	if v, ok := props[config.ReplicaAlterLogDirsIOMaxBytesPerSecond]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= 0 {
			rate = n
		}
	}
	if rate != a.q.UpperBound() {
		a.log.WithField("bytes_per_second", rate).Info("log-dir move throttle rate updated")
	}
	a.q.UpdateQuota(rate)
}

// registerQuota applies the configured rate and follows its changes.
func (m *alterLogDirsManager) registerQuota(cfg *config.Config, dyn *DynamicBrokerConfig) {
	a := &alterLogDirsQuota{q: m.quota, dynamic: dyn, log: m.log}
	if cfg != nil {
		a.apply(cfg)
	}
	if dyn != nil {
		dyn.AddReconfigurable(a)
	}
}
