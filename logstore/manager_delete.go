package logstore

// manager_delete.go — LogManager's deletion of logs: a deleted partition's directory is
// renamed to <topic>-<partition>.<id>-delete and removed after file.delete.delay.ms
// (LogManager.asyncDelete and the kafka-delete-logs task).

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
)

// DeleteLog is LogManager.asyncDelete: the partition dir is renamed to
// <topic>-<p>.<32 hex>-delete, the dir's checkpoints are rewritten without it, and the
// files are removed after file.delete.delay.ms. Open file handles stay valid until then,
// so in-flight reads finish.
func (m *Manager) DeleteLog(tp TopicPartition) error {
	m.deleteFutureLogQuietly(tp) // a log-dir move in progress goes too (asyncDelete(isFuture))
	m.createMu.Lock()
	defer m.createMu.Unlock()
	m.mu.Lock()
	l, ok := m.mu.logs[tp]
	dir := m.mu.logDir[tp]
	if ok {
		delete(m.mu.logs, tp)
		delete(m.mu.logDir, tp)
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	if m.cleaner != nil {
		m.cleaner.abort(tp)
	}
	l.markOffline() // no more appends; readers holding regions keep their fds
	target := filepath.Join(dir, logDeleteDirName(tp))
	if m.isOffline(dir) {
		return fmt.Errorf("delete log %s in offline dir %s: %w", tp, dir, ErrKafkaStorage)
	}
	if err := l.RenameDir(target); err != nil {
		m.markDirOffline(dir, fmt.Errorf("rename %s for delete: %w", l.Dir(), err))
		return fmt.Errorf("delete log %s: %w", tp, ErrKafkaStorage)
	}
	if err := m.fs.SyncDir(dir); err != nil {
		m.markDirOffline(dir, fmt.Errorf("fsync %s: %w", dir, err))
		return fmt.Errorf("delete log %s: %w", tp, ErrKafkaStorage)
	}
	m.checkpointDir(dir)
	delay := time.Duration(l.Config().FileDeleteDelayMs) * time.Millisecond
	m.scheduleDelete(target, delay, func() error {
		l.Close() // errors ignored: the files are going away
		return m.fs.RemoveAll(target)
	})
	m.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "dir": target}).Info("log renamed for deletion")
	return nil
}

// logDeleteDirName is UnifiedLog.logDeleteDirName: the topic is cut so the name fits 255.
func logDeleteDirName(tp TopicPartition) string {
	var id [16]byte
	rand.Read(id[:])
	suffix := fmt.Sprintf("-%d.%s-delete", tp.Partition, hex.EncodeToString(id[:]))
	n := len(tp.Topic)
	if n > 255-len(suffix) {
		n = 255 - len(suffix)
	}
	return tp.Topic[:n] + suffix
}

// scheduleDelete runs fn after delay (file.delete.delay.ms); Kafka's scheduler tasks
// "delete-file" and "kafka-delete-logs".
func (m *Manager) scheduleDelete(what string, delay time.Duration, fn func() error) {
	m.mu.Lock()
	m.mu.deletes = append(m.mu.deletes, pendingDelete{due: m.clock().Add(delay), what: what, fn: fn})
	m.mu.Unlock()
}

// processDueDeletes runs the deletions that are due.
func (m *Manager) processDueDeletes() {
	now := m.clock()
	m.mu.Lock()
	var due []pendingDelete
	kept := m.mu.deletes[:0]
	for _, d := range m.mu.deletes {
		if !d.due.After(now) {
			due = append(due, d)
		} else {
			kept = append(kept, d)
		}
	}
	m.mu.deletes = kept
	m.mu.Unlock()
	m.runDeletes(due)
}

func (m *Manager) runDeletes(due []pendingDelete) {
	for _, d := range due {
		if err := d.fn(); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.log.WithError(err).WithField("file", d.what).Warn("failed to delete file")
		}
	}
}

// PendingDeletes is how many delayed deletions are queued (for tests and metrics).
func (m *Manager) PendingDeletes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.mu.deletes)
}
