package logstore

// manager_dirs.go — LogManager's periodic work over its log directories (flushes and the
// recovery-point, log-start-offset and high-watermark checkpoints), a directory going
// offline (LogDirFailureChannel), and the clean shutdown that writes .kafka_cleanshutdown.

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/sirupsen/logrus"
)

// flushDirtyLogs is LogManager.flushDirtyLogs: each log applies its flush.ms policy.
func (m *Manager) flushDirtyLogs() {
	for _, logs := range m.onlineLogsByDir() {
		for _, l := range logs {
			if err := l.FlushIfNeeded(); err != nil && !errors.Is(err, ErrKafkaStorage) && !errors.Is(err, ErrClosed) {
				m.log.WithError(err).WithField("dir", l.Dir()).Warn("flush failed")
			}
		}
	}
}

func (m *Manager) checkpointRecoveryPoints() {
	for dir, logs := range m.onlineLogsByDir() {
		m.writeDirCheckpoint(dir, RecoveryPointCheckpointFile, recoveryPoints(logs))
	}
}

func (m *Manager) checkpointLogStartOffsets() {
	for dir, logs := range m.onlineLogsByDir() {
		m.writeDirCheckpoint(dir, LogStartOffsetCheckpointFile, logStartOffsets(logs))
	}
}

func (m *Manager) checkpointHighWatermarks() {
	for dir, logs := range m.onlineLogsByDir() {
		hw := make(map[TopicPartition]int64, len(logs))
		for _, l := range logs {
			hw[l.TopicPartition()] = l.HighWatermark()
		}
		m.writeDirCheckpoint(dir, HighWatermarkCheckpointFile, hw)
	}
}

// checkpointDir rewrites a dir's recovery-point and log-start checkpoints (after a delete).
func (m *Manager) checkpointDir(dir string) {
	logs := m.onlineLogsByDir()[dir]
	m.writeDirCheckpoint(dir, RecoveryPointCheckpointFile, recoveryPoints(logs))
	m.writeDirCheckpoint(dir, LogStartOffsetCheckpointFile, logStartOffsets(logs))
}

func recoveryPoints(logs []*Log) map[TopicPartition]int64 {
	out := make(map[TopicPartition]int64, len(logs))
	for _, l := range logs {
		out[l.TopicPartition()] = l.RecoveryPoint()
	}
	return out
}

// logStartOffsets lists only logs whose start is above their first segment's base, as
// Kafka's checkpointLogStartOffsetsInDir does.
func logStartOffsets(logs []*Log) map[TopicPartition]int64 {
	out := make(map[TopicPartition]int64)
	for _, l := range logs {
		base, ok := firstSegmentBase(l)
		if !ok {
			continue
		}
		if start := l.LogStartOffset(); start > base {
			out[l.TopicPartition()] = start
		}
	}
	return out
}

func (m *Manager) writeDirCheckpoint(dir, name string, offsets map[TopicPartition]int64) bool {
	if m.isOffline(dir) {
		return false
	}
	m.checkpointMu.Lock()
	err := WriteOffsetCheckpoint(m.fs, filepath.Join(dir, name), offsets)
	m.checkpointMu.Unlock()
	if err != nil {
		m.markDirOffline(dir, fmt.Errorf("checkpoint %s: %w", name, err))
		return false
	}
	return true
}

// markDirOffline is LogDirFailureChannel.maybeAddOfflineLogDir plus
// ReplicaManager.handleLogDirFailure: every log in dir stops serving (ErrKafkaStorage),
// the operator is told at Error level, and the callbacks run on an owned goroutine.
func (m *Manager) markDirOffline(dir string, cause error) { m.markDirOfflineExcept(dir, cause, nil) }

func (m *Manager) markDirOfflineExcept(dir string, cause error, except *TopicPartition) {
	m.mu.Lock()
	if _, off := m.mu.offline[dir]; off {
		m.mu.Unlock()
		return
	}
	m.mu.offline[dir] = cause
	var logs []*Log
	for tp, d := range m.mu.logDir {
		if d == dir && (except == nil || tp != *except) {
			logs = append(logs, m.mu.logs[tp])
		}
	}
	logs = append(logs, m.dropFutureLogsInDirLocked(dir, except)...) // their moves stop
	left := len(m.dirs) - len(m.mu.offline)
	shutdown := m.mu.shutdown
	m.mu.Unlock()
	for _, l := range logs {
		l.markOffline()
	}
	m.log.WithError(cause).WithFields(logrus.Fields{"dir": dir, "partitions": len(logs), "online_dirs": left}).
		Error("log dir is offline after an I/O error; stopped serving its partitions")
	if left == 0 {
		m.log.WithField("dirs", m.dirs).Error("all log dirs have failed; the broker must shut down")
	}
	if shutdown || (m.cfg.OnDirOffline == nil && m.cfg.OnAllDirsOffline == nil) {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if m.cfg.OnDirOffline != nil {
			m.cfg.OnDirOffline(dir)
		}
		if left == 0 && m.cfg.OnAllDirsOffline != nil {
			m.cfg.OnAllDirsOffline()
		}
	}()
}

func (m *Manager) isOffline(dir string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, off := m.mu.offline[dir]
	return off
}

// OfflineDirs lists the dirs taken offline, in config order.
func (m *Manager) OfflineDirs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, d := range m.dirs {
		if _, off := m.mu.offline[d]; off {
			out = append(out, d)
		}
	}
	return out
}

// OnlineDirs lists the dirs still serving, in config order.
func (m *Manager) OnlineDirs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.onlineDirsLocked()
}

func (m *Manager) onlineDirsLocked() []string {
	var out []string
	for _, d := range m.dirs {
		if _, off := m.mu.offline[d]; !off {
			out = append(out, d)
		}
	}
	return out
}

// Dirs lists every configured log dir (absolute), in config order.
func (m *Manager) Dirs() []string { return append([]string(nil), m.dirs...) }

// Shutdown is LogManager.shutdown: stop the background tasks, then per online dir flush
// and close every log, write the recovery-point, log-start and high-watermark
// checkpoints and the clean-shutdown marker, then release the locks. A dir where anything
// failed gets no marker, so the next start recovers it.
func (m *Manager) Shutdown() error {
	m.mu.Lock()
	if m.mu.shutdown {
		m.mu.Unlock()
		return nil
	}
	m.mu.shutdown = true
	cancel := m.bgCancel
	pending := m.mu.deletes
	m.mu.deletes = nil
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
	// Pending deletions of already-renamed files are done now rather than left for the
	// next start (Kafka leaves them; loading removes them either way).
	m.runDeletes(pending)

	var errs []error
	byDir := m.onlineLogsByDir()
	var wg sync.WaitGroup
	var errMu sync.Mutex
	for dir, logs := range byDir {
		wg.Add(1)
		go func(dir string, logs []*Log) {
			defer wg.Done()
			ok := m.shutdownDir(dir, logs)
			if !ok {
				errMu.Lock()
				errs = append(errs, fmt.Errorf("shutdown log dir %s: %w", dir, ErrKafkaStorage))
				errMu.Unlock()
			}
		}(dir, logs)
	}
	wg.Wait()
	// Logs of offline dirs: close what can be closed, write nothing.
	m.mu.Lock()
	var offlineLogs []*Log
	for tp, l := range m.mu.logs {
		if _, off := m.mu.offline[m.mu.logDir[tp]]; off {
			offlineLogs = append(offlineLogs, l)
		}
	}
	m.mu.Unlock()
	for _, l := range offlineLogs {
		l.Close()
	}
	m.wg.Wait() // callbacks started by failures during shutdown
	m.unlockAll()
	m.log.Info("log manager shut down")
	return errors.Join(errs...)
}

func (m *Manager) shutdownDir(dir string, logs []*Log) bool {
	// Bounded like loading: num.recovery.threads.per.data.dir closers.
	work := make(chan *Log, len(logs))
	for _, l := range logs {
		work <- l
	}
	close(work)
	var wg sync.WaitGroup
	for i := 0; i < m.recoveryThreadsPerDir(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range work {
				if err := l.Flush(); err != nil {
					m.markDirOffline(dir, fmt.Errorf("flush %s at shutdown: %w", l.TopicPartition(), err))
				}
			}
		}()
	}
	wg.Wait()
	if m.isOffline(dir) {
		return false
	}
	// Checkpoint before closing: the values are final once flushed.
	rp, ls := recoveryPoints(logs), logStartOffsets(logs)
	hw := make(map[TopicPartition]int64, len(logs))
	for _, l := range logs {
		hw[l.TopicPartition()] = l.HighWatermark()
	}
	closeErr := false
	for _, l := range logs {
		if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
			m.markDirOffline(dir, fmt.Errorf("close %s at shutdown: %w", l.TopicPartition(), err))
			closeErr = true
		}
	}
	if closeErr {
		return false
	}
	if !m.writeDirCheckpoint(dir, RecoveryPointCheckpointFile, rp) ||
		!m.writeDirCheckpoint(dir, LogStartOffsetCheckpointFile, ls) ||
		!m.writeDirCheckpoint(dir, HighWatermarkCheckpointFile, hw) {
		return false
	}
	if m.cleaner != nil && !m.cleaner.checkpointDir(dir) {
		return false
	}
	if err := writeCleanShutdownMarker(m.fs, dir); err != nil {
		m.markDirOffline(dir, err)
		return false
	}
	return true
}

func (m *Manager) closeAllQuietly() {
	m.mu.Lock()
	logs := make([]*Log, 0, len(m.mu.logs))
	for _, l := range m.mu.logs {
		logs = append(logs, l)
	}
	m.mu.Unlock()
	for _, l := range logs {
		l.Close()
	}
}

func (m *Manager) unlockAll() {
	m.mu.Lock()
	locks := m.mu.locks
	m.mu.locks = map[string]*dirLock{}
	m.mu.Unlock()
	for d, l := range locks {
		if err := l.unlock(); err != nil {
			m.log.WithError(err).WithField("dir", d).Warn("failed to release log dir lock")
		}
	}
}

// markOffline stops a log from taking appends after its dir went offline or it was
// deleted; its operations then answer ErrKafkaStorage.
func (l *Log) markOffline() {
	l.mu.Lock()
	l.mu.offline = true
	l.mu.Unlock()
}

// firstSegmentBase is the base offset of l's oldest segment.
func firstSegmentBase(l *Log) (int64, bool) {
	segs := l.Segments()
	if len(segs) == 0 {
		return 0, false
	}
	return segs[0].BaseOffset, true
}
