package logstore

// sim.go — entry points for the deterministic simulation (broker/sim.go), which runs a
// Manager without Start's goroutines and calls its periodic work on a simulated clock.

// CheckpointNow writes, once and in the caller's goroutine, the checkpoints Start's tasks
// write periodically: high watermarks (replica.high.watermark.checkpoint.interval.ms),
// recovery points and log start offsets.
func (m *Manager) CheckpointNow() {
	m.checkpointHighWatermarks()
	m.checkpointRecoveryPoints()
	m.checkpointLogStartOffsets()
}

// WaitRollFlushes waits until no log is flushing rolled segments in the background (the
// flush a segment roll schedules, rollFlusher). The simulation calls it at the end of every
// step that may have appended or truncated, so that a roll's fsync is finished, at the same
// point of every replay, before anything else (a crash) can happen.
func (m *Manager) WaitRollFlushes() {
	for _, l := range m.AllLogs() {
		l.flushWG.Wait()
	}
}
