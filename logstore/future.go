package logstore

// future.go is the future-log half of Kafka's LogManager (KIP-113, moving a replica between
// the log dirs of one broker). A partition being moved has, besides its current log, a
// "future" log in the destination dir, named <topic>-<partition>.<32 hex>-future
// (UnifiedLog.logFutureDirName). The broker's mover (ReplicaAlterLogDirsThread) copies the
// current log into it; once it has caught up, ReplaceCurrentWithFutureLog renames it to
// <topic>-<partition> and renames the old one for deletion
// (LogManager.replaceCurrentWithFutureLog). Future dirs found at start-up are loaded as
// future logs (LogManager.loadLog), so a move resumes after a restart. A dir named for a
// partition that is not hosted yet is remembered (LogManager.preferredLogDirs) and the log
// is created there when it is.
//
// Future logs are flushed, checkpointed and closed with the others of their dir, but the
// cleaner and retention leave them alone: the mover copies what they did to the current log.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// FutureDirSuffix ends the name of a future log's directory.
const FutureDirSuffix = "-future"

// ErrLogDirNotFound is a dir that is not one of log.dirs (LOG_DIR_NOT_FOUND).
var ErrLogDirNotFound = errors.New("logstore: log dir is not found in the config")

// futureState holds the future logs and the preferred dirs. mu is a leaf lock: it may be
// taken under Manager.mu, never the other way round. swapMu is held for reading by the
// truncation of a current log and for writing by ReplaceCurrentWithFutureLog, so the swap
// never sees a current log half truncated (Kafka holds the partition lock for both).
type futureState struct {
	mu        sync.Mutex
	logs      map[TopicPartition]*Log
	dirs      map[TopicPartition]string
	preferred map[TopicPartition]string
	swapMu    sync.RWMutex
}

func (f *futureState) initLocked() {
	if f.logs == nil {
		f.logs = make(map[TopicPartition]*Log)
		f.dirs = make(map[TopicPartition]string)
		f.preferred = make(map[TopicPartition]string)
	}
}

// logFutureDirName is UnifiedLog.logFutureDirName: never cut, so a topic too long for it
// cannot be moved (AlterReplicaLogDirs checks FutureDirNameTooLong first).
func logFutureDirName(tp TopicPartition) string {
	var id [16]byte
	rand.Read(id[:])
	return tp.String() + "." + hex.EncodeToString(id[:]) + FutureDirSuffix
}

// FutureDirNameTooLong reports whether tp's future dir name would pass 255 bytes
// (KAFKA-4893: such a partition cannot be moved).
func FutureDirNameTooLong(tp TopicPartition) bool {
	return len(tp.String())+1+32+len(FutureDirSuffix) > 255
}

// trimFutureDirSuffix turns "<topic>-<p>.<id>-future" into "<topic>-<p>" (Kafka's
// FutureDirPattern); other names are returned as they are.
func trimFutureDirSuffix(name string) string {
	base, ok := strings.CutSuffix(name, FutureDirSuffix)
	if !ok {
		return name
	}
	i := strings.LastIndexByte(base, '.')
	if i <= 0 || i == len(base)-1 || strings.ContainsAny(base[i+1:], " \t\n") {
		return name
	}
	return base[:i]
}

// IsLogDirOnline is LogManager.isLogDirOnline: dir must be one of log.dirs exactly as its
// absolute path reads (ErrLogDirNotFound otherwise).
func (m *Manager) IsLogDirOnline(dir string) (bool, error) {
	for _, d := range m.dirs {
		if d == dir {
			return !m.isOffline(d), nil
		}
	}
	return false, fmt.Errorf("log dir %s is not found in the config: %w", dir, ErrLogDirNotFound)
}

// MaybeUpdatePreferredLogDir is LogManager.maybeUpdatePreferredLogDir: the next creation of
// tp's log goes to dir, unless its current or future log is there already.
func (m *Manager) MaybeUpdatePreferredLogDir(tp TopicPartition, dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.mu.logs[tp]; ok && m.mu.logDir[tp] == dir && l != nil {
		return
	}
	m.fut.mu.Lock()
	defer m.fut.mu.Unlock()
	m.fut.initLocked()
	if _, ok := m.fut.logs[tp]; ok && m.fut.dirs[tp] == dir {
		return
	}
	m.fut.preferred[tp] = dir
}

// createDirLocked is the dir a new current log of tp goes to: the preferred one if it is
// online, else the one with the fewest partitions. Caller holds m.mu.
func (m *Manager) createDirLocked(tp TopicPartition) string {
	m.fut.mu.Lock()
	pref := m.fut.preferred[tp]
	m.fut.mu.Unlock()
	if pref != "" {
		if _, off := m.mu.offline[pref]; !off {
			return pref
		}
	}
	return m.nextLogDirLocked()
}

// clearPreferredLogDir forgets tp's preferred dir once its log was created.
func (m *Manager) clearPreferredLogDir(tp TopicPartition) {
	m.fut.mu.Lock()
	delete(m.fut.preferred, tp)
	m.fut.mu.Unlock()
}

// GetFutureLog returns tp's future log, if a move is in progress.
func (m *Manager) GetFutureLog(tp TopicPartition) (*Log, bool) {
	m.fut.mu.Lock()
	defer m.fut.mu.Unlock()
	l, ok := m.fut.logs[tp]
	return l, ok
}

// FutureLogs returns every future log, sorted by topic and partition.
func (m *Manager) FutureLogs() []*Log {
	m.fut.mu.Lock()
	out := make([]*Log, 0, len(m.fut.logs))
	for _, l := range m.fut.logs {
		out = append(out, l)
	}
	m.fut.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].TopicPartition(), out[j].TopicPartition()
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return out
}

// isFutureLog reports whether l is a future log (the cleaner and retention skip those).
func (m *Manager) isFutureLog(l *Log) bool {
	m.fut.mu.Lock()
	defer m.fut.mu.Unlock()
	return m.fut.logs[l.TopicPartition()] == l
}

// futureLogsByDirLocked adds the future logs of the dirs in out to them. Caller holds m.mu.
func (m *Manager) futureLogsByDirLocked(out map[string][]*Log) {
	m.fut.mu.Lock()
	defer m.fut.mu.Unlock()
	for tp, l := range m.fut.logs {
		d := m.fut.dirs[tp]
		if _, ok := out[d]; ok {
			out[d] = append(out[d], l)
		}
	}
}

// dropFutureLogsInDirLocked forgets the future logs of a dir that went offline and returns
// those to mark offline: all but except's, the failing log that marked itself
// (LogManager.handleLogDirFailure's removeOfflineLogs(futureLogs)). Caller holds m.mu.
func (m *Manager) dropFutureLogsInDirLocked(dir string, except *TopicPartition) []*Log {
	m.fut.mu.Lock()
	defer m.fut.mu.Unlock()
	var out []*Log
	for tp, l := range m.fut.logs {
		if m.fut.dirs[tp] == dir {
			if except == nil || tp != *except {
				out = append(out, l)
			}
			delete(m.fut.logs, tp)
			delete(m.fut.dirs, tp)
		}
	}
	return out
}

// addLoadedFutureLog registers a future log found at start-up; two for one partition is
// fatal, as in LogManager.loadLog.
func (m *Manager) addLoadedFutureLog(dir string, l *Log) error {
	tp := l.TopicPartition()
	m.fut.mu.Lock()
	defer m.fut.mu.Unlock()
	m.fut.initLocked()
	if other, dup := m.fut.logs[tp]; dup {
		return fmt.Errorf("logstore: duplicate log directories found: %s, %s", l.Dir(), other.Dir())
	}
	m.fut.logs[tp] = l
	m.fut.dirs[tp] = dir
	m.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "dir": l.Dir()}).Info("loaded future log")
	return nil
}

// CreateFutureLog is LogManager.getOrCreateLog(isFuture = true): tp's future log in dir,
// created empty if there is none yet (created reports which). tp's current log must exist
// and not be in dir; no log dir may be offline, so one partition never gets future logs in
// two dirs.
func (m *Manager) CreateFutureLog(tp TopicPartition, topicID [16]byte, cfg LogConfig, dir string) (l *Log, created bool, err error) {
	m.createMu.Lock()
	defer m.createMu.Unlock()
	m.fut.mu.Lock()
	m.fut.initLocked()
	l, ok := m.fut.logs[tp]
	m.fut.mu.Unlock()
	if ok {
		return l, false, nil
	}
	if off := m.OfflineDirs(); len(off) > 0 {
		return nil, false, fmt.Errorf("can not create log for %s because log directories %s are offline: %w",
			tp, strings.Join(off, ","), ErrKafkaStorage)
	}
	m.mu.Lock()
	_, hasCurrent := m.mu.logs[tp]
	curDir := m.mu.logDir[tp]
	shutdown := m.mu.shutdown
	m.mu.Unlock()
	switch {
	case shutdown:
		return nil, false, fmt.Errorf("create future log %s: %w", tp, ErrClosed)
	case !hasCurrent:
		return nil, false, fmt.Errorf("create future log %s: no current log", tp)
	case curDir == dir:
		return nil, false, fmt.Errorf("can not create the future log for %s in the current log directory of this partition", tp)
	}
	if online, err := m.IsLogDirOnline(dir); err != nil {
		return nil, false, err
	} else if !online {
		return nil, false, fmt.Errorf("log directory %s is offline: %w", dir, ErrKafkaStorage)
	}
	path := filepath.Join(dir, logFutureDirName(tp))
	if err := m.fs.MkdirAll(path, 0o755); err != nil {
		m.markDirOffline(dir, fmt.Errorf("create %s: %w", path, err))
		return nil, false, fmt.Errorf("create future log %s in %s: %w", tp, dir, ErrKafkaStorage)
	}
	opts := m.openOptions(dir, tp, cfg)
	opts.TopicID = topicID
	opts.CleanShutdown = true
	opts.LogStartOffset = -1
	l, err = OpenLog(path, opts)
	if err != nil {
		if errors.Is(err, ErrKafkaStorage) || isIOError(err) {
			m.markDirOffline(dir, fmt.Errorf("create future log %s: %w", path, err))
			return nil, false, fmt.Errorf("create future log %s in %s: %w", tp, dir, ErrKafkaStorage)
		}
		return nil, false, fmt.Errorf("create future log %s in %s: %w", tp, dir, err)
	}
	m.fut.mu.Lock()
	m.fut.logs[tp] = l
	m.fut.dirs[tp] = dir
	delete(m.fut.preferred, tp)
	m.fut.mu.Unlock()
	m.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "dir": path}).Info("created future log")
	return l, true, nil
}

// DeleteFutureLog is LogManager.asyncDelete(isFuture = true): the future dir is renamed
// <topic>-<p>.<id>-delete and removed after file.delete.delay.ms. No future log: nothing.
func (m *Manager) DeleteFutureLog(tp TopicPartition) error {
	m.createMu.Lock()
	defer m.createMu.Unlock()
	m.fut.mu.Lock()
	l, ok := m.fut.logs[tp]
	dir := m.fut.dirs[tp]
	delete(m.fut.logs, tp)
	delete(m.fut.dirs, tp)
	m.fut.mu.Unlock()
	if !ok {
		return nil
	}
	l.markOffline()
	if m.isOffline(dir) {
		return fmt.Errorf("delete future log %s in offline dir %s: %w", tp, dir, ErrKafkaStorage)
	}
	if err := m.renameForDelete(l, dir); err != nil {
		return err
	}
	m.checkpointDir(dir)
	m.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "dir": l.Dir()}).
		Info("future log renamed for deletion")
	return nil
}

// deleteFutureLogQuietly deletes tp's future log along with its current one (StopReplica
// with delete), logging a failure.
func (m *Manager) deleteFutureLogQuietly(tp TopicPartition) {
	if err := m.DeleteFutureLog(tp); err != nil {
		m.log.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).
			Warn("could not delete the future log")
	}
}

// renameForDelete renames l's dir to a -delete name and schedules its removal.
func (m *Manager) renameForDelete(l *Log, dir string) error {
	target := filepath.Join(dir, logDeleteDirName(l.TopicPartition()))
	if err := l.RenameDir(target); err != nil {
		m.markDirOffline(dir, fmt.Errorf("rename %s for delete: %w", l.Dir(), err))
		return fmt.Errorf("delete log %s: %w", l.TopicPartition(), ErrKafkaStorage)
	}
	if err := m.fs.SyncDir(dir); err != nil {
		m.markDirOffline(dir, fmt.Errorf("fsync %s: %w", dir, err))
		return fmt.Errorf("delete log %s: %w", l.TopicPartition(), ErrKafkaStorage)
	}
	delay := time.Duration(l.Config().FileDeleteDelayMs) * time.Millisecond
	m.scheduleDelete(target, delay, func() error {
		l.Close() // errors ignored: the files are going away
		return m.fs.RemoveAll(target)
	})
	return nil
}

// ReplaceCurrentWithFutureLog is LogManager.replaceCurrentWithFutureLog: the future log is
// renamed <topic>-<partition> and becomes tp's log, taking the current log's high
// watermark, config and newer leader epochs; the current log stops taking appends, is
// renamed for deletion and removed after file.delete.delay.ms (readers holding its files
// finish first). The caller stops every append and truncation of tp meanwhile (the
// partition's lock) and checks that both logs end at the same offset.
func (m *Manager) ReplaceCurrentWithFutureLog(tp TopicPartition) (*Log, error) {
	m.fut.swapMu.Lock()
	defer m.fut.swapMu.Unlock()
	m.createMu.Lock()
	defer m.createMu.Unlock()
	m.mu.Lock()
	src, srcDir := m.mu.logs[tp], m.mu.logDir[tp]
	m.mu.Unlock()
	m.fut.mu.Lock()
	dst, dstDir := m.fut.logs[tp], m.fut.dirs[tp]
	m.fut.mu.Unlock()
	if src == nil || m.isOffline(srcDir) {
		return nil, fmt.Errorf("the current replica for %s is offline: %w", tp, ErrKafkaStorage)
	}
	if dst == nil {
		return nil, fmt.Errorf("the future replica for %s is offline: %w", tp, ErrKafkaStorage)
	}
	if src.LogEndOffset() != dst.LogEndOffset() {
		return nil, fmt.Errorf("replace %s: current log ends at %d, future log at %d", tp, src.LogEndOffset(), dst.LogEndOffset())
	}
	if m.cleaner != nil {
		m.cleaner.pause(tp)
		defer m.cleaner.resume(tp)
	}
	m.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "current": src.Dir(), "future": dst.Dir()}).
		Info("replacing current log with future log")
	dst.SetConfig(src.Config())
	// The leader's epoch start recorded with no batch yet (makeLeader) exists only in the
	// current log's cache; the future log learnt epochs from the batches it copied.
	latest, ok := dst.LatestEpoch()
	for _, e := range src.EpochEntries() {
		if !ok || e.Epoch > latest {
			if err := dst.MaybeAssignEpochStartOffset(e.Epoch, e.StartOffset); err != nil {
				return nil, fmt.Errorf("replace %s: copy leader epoch %d: %w", tp, e.Epoch, err)
			}
		}
	}
	if err := dst.RenameDir(filepath.Join(dstDir, tp.String())); err != nil {
		m.markDirOffline(dstDir, fmt.Errorf("rename future log %s: %w", dst.Dir(), err))
		return nil, fmt.Errorf("replace %s: %w", tp, err)
	}
	if err := m.fs.SyncDir(dstDir); err != nil {
		m.markDirOffline(dstDir, fmt.Errorf("fsync %s: %w", dstDir, err))
		return nil, fmt.Errorf("replace %s: %w", tp, ErrKafkaStorage)
	}
	dst.UpdateHighWatermark(src.HighWatermark())
	m.mu.Lock()
	m.mu.logs[tp] = dst
	m.mu.logDir[tp] = dstDir
	m.mu.Unlock()
	m.fut.mu.Lock()
	delete(m.fut.logs, tp)
	delete(m.fut.dirs, tp)
	m.fut.mu.Unlock()
	if m.cleaner != nil {
		m.cleaner.moveCheckpoint(tp, srcDir, dstDir)
	}
	src.markOffline() // no append reaches it any more; readers keep their files
	if !m.isOffline(srcDir) {
		if err := m.renameForDelete(src, srcDir); err != nil {
			return dst, err // the future log is in place; the old dir went offline
		}
		m.checkpointDir(srcDir)
	}
	m.checkpointDir(dstDir)
	m.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "dir": dst.Dir()}).
		Info("the current replica is successfully replaced with the future replica")
	return dst, nil
}

// moveCheckpoint is LogCleanerManager.alterCheckpointDir: tp's first dirty offset moves
// with its log.
func (c *Cleaner) moveCheckpoint(tp TopicPartition, src, dst string) {
	c.mu.Lock()
	off, ok := c.mu.checkpoints[src][tp]
	if ok {
		delete(c.mu.checkpoints[src], tp)
		if c.mu.checkpoints[dst] == nil {
			c.mu.checkpoints[dst] = make(map[TopicPartition]int64)
		}
		c.mu.checkpoints[dst][tp] = off
	}
	c.mu.Unlock()
	if ok {
		c.checkpointDir(src)
		c.checkpointDir(dst)
	}
}
