package logstore

// cleaner_stats.go keeps what Kafka's LogCleaner and LogCleanerManager gauges report: the
// last cleaning pass's offset-map use, recopy ratio and duration, the dirtiest cleanable
// ratio seen by the last selection, and the partitions whose last pass failed.

import (
	"sync"
	"time"
)

// cleanerStatsState is the Cleaner's record of its passes (guarded by mu).
type cleanerStatsState struct {
	mu            sync.Mutex
	last          CleanerStats
	lastElapsed   time.Duration
	maxDirtyRatio float64
	// failed holds the partitions whose last pass failed with an unexpected error, by log
	// dir: Kafka marks those uncleanable; samsa retries them, so a success clears them.
	failed map[TopicPartition]string
}

// CleanerMetrics is a snapshot for the LogCleaner / LogCleanerManager gauges.
type CleanerMetrics struct {
	// BufferUtilization is the last pass's offset map fill (0..1, max-buffer-utilization-percent/100).
	BufferUtilization float64
	// RecopyRatio is the last pass's bytes written / bytes read (cleaner-recopy-percent/100).
	RecopyRatio float64
	// LastCleanTime is how long the last pass took (max-clean-time-secs).
	LastCleanTime time.Duration
	// MaxDirtyRatio is the highest dirty ratio over the compacted logs at the last
	// selection (max-dirty-percent/100).
	MaxDirtyRatio float64
	// Uncleanable counts, per log dir, the partitions whose last pass failed
	// (uncleanable-partitions-count).
	Uncleanable map[string]int
}

func (s *cleanerStatsState) recordPass(tp TopicPartition, dir string, stats CleanerStats, elapsed time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.failed == nil {
			s.failed = map[TopicPartition]string{}
		}
		s.failed[tp] = dir
		return
	}
	delete(s.failed, tp)
	s.last, s.lastElapsed = stats, elapsed
}

func (s *cleanerStatsState) recordDirtiest(ratio float64) {
	s.mu.Lock()
	s.maxDirtyRatio = ratio
	s.mu.Unlock()
}

// CleanerMetrics returns the cleaner's gauges' values; zero when the cleaner is off.
func (m *Manager) CleanerMetrics() CleanerMetrics {
	out := CleanerMetrics{Uncleanable: map[string]int{}}
	for _, d := range m.Dirs() {
		out.Uncleanable[d] = 0
	}
	if m.cleaner == nil {
		return out
	}
	s := &m.cleaner.stats
	s.mu.Lock()
	out.BufferUtilization = s.last.BufferUtilization
	out.RecopyRatio = float64(s.last.BytesWritten) / float64(max(s.last.BytesRead, 1))
	out.LastCleanTime = s.lastElapsed
	out.MaxDirtyRatio = s.maxDirtyRatio
	failed := make(map[TopicPartition]string, len(s.failed))
	for tp, d := range s.failed {
		failed[tp] = d
	}
	s.mu.Unlock()
	for tp, d := range failed {
		if _, ok := m.GetLog(tp); ok { // a deleted partition is no longer uncleanable
			out.Uncleanable[d]++
		}
	}
	return out
}
