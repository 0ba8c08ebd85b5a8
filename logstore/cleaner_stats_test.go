package logstore

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestCleanerMetrics: a cleaning pass records its offset-map use, recopy ratio and the
// dirtiest ratio for the LogCleaner / LogCleanerManager gauges.
func TestCleanerMetrics(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	cfg := testManagerConfig(t, clock, d)
	cfg.TopicConfig = compactedTopicConfig
	m := openTestManager(t, cfg)
	if c := m.CleanerMetrics(); c.BufferUtilization != 0 || c.RecopyRatio != 0 || c.MaxDirtyRatio != 0 || c.Uncleanable[d] != 0 {
		t.Fatalf("before any pass: %+v", c)
	}
	compactedLog(t, m, clock, 6)
	if !m.cleaner.cleanOnce() {
		t.Fatal("dirty compacted log not cleaned")
	}
	c := m.CleanerMetrics()
	if c.BufferUtilization <= 0 || c.BufferUtilization > 1 {
		t.Errorf("buffer utilization %v, want in (0, 1]", c.BufferUtilization)
	}
	// Duplicated keys were dropped: less was written than read.
	if c.RecopyRatio <= 0 || c.RecopyRatio >= 1 {
		t.Errorf("recopy ratio %v, want in (0, 1)", c.RecopyRatio)
	}
	if c.MaxDirtyRatio <= 0 || c.MaxDirtyRatio > 1 {
		t.Errorf("max dirty ratio %v, want in (0, 1]", c.MaxDirtyRatio)
	}
	if n, ok := c.Uncleanable[d]; !ok || n != 0 {
		t.Errorf("uncleanable %v, want 0 for %s", c.Uncleanable, d)
	}
	// A pass that failed unexpectedly marks the partition until one succeeds; a partition
	// without a log (deleted) is not counted.
	tp := TopicPartition{"compacted", 0}
	m.cleaner.stats.recordPass(tp, d, CleanerStats{}, 0, errors.New("corrupt batch"))
	m.cleaner.stats.recordPass(TopicPartition{"gone", 0}, d, CleanerStats{}, 0, errors.New("corrupt batch"))
	if n := m.CleanerMetrics().Uncleanable[d]; n != 1 {
		t.Errorf("uncleanable %d after a failed pass, want 1", n)
	}
	m.cleaner.stats.recordPass(tp, d, CleanerStats{BytesRead: 10, BytesWritten: 5}, time.Second, nil)
	if n := m.CleanerMetrics().Uncleanable[d]; n != 0 {
		t.Errorf("uncleanable %d after a successful pass, want 0", n)
	}
}

// TestSegmentFlushObserver: every segment flush is timed for the observers, until stop.
func TestSegmentFlushObserver(t *testing.T) {
	clock := newFakeClock()
	m := openTestManager(t, testManagerConfig(t, clock, t.TempDir()))
	l, err := m.GetOrCreateLog(TopicPartition{"flushed", 0}, [16]byte{}, logConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	stop := ObserveSegmentFlushes(func(d time.Duration) {
		if d >= 0 {
			n.Add(1)
		}
	})
	produce(t, l, clock.Now().UnixMilli(), "k", "v")
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n.Load() < 1 {
		t.Fatalf("%d flushes observed after Flush, want >= 1", n.Load())
	}
	stop()
	seen := n.Load()
	produce(t, l, clock.Now().UnixMilli(), "k", "v2")
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n.Load() != seen {
		t.Fatalf("observer called after stop")
	}
}
