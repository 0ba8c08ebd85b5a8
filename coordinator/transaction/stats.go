package transaction

// MarkerStats is what TransactionMarkerChannelManager's gauges read
// (kafka.coordinator.transaction TransactionMarkerChannelManager).
type MarkerStats struct {
	// UnknownDestinationQueueSize: marker entries (one per transaction and destination) waiting for their partition's leader to be known
	// (markersQueueForUnknownBroker.totalNumMarkers).
	UnknownDestinationQueueSize int
	// LogAppendRetryQueueSize: transaction completions waiting to retry their append to the
	// transaction log (txnLogAppendRetryQueue.size).
	LogAppendRetryQueueSize int
}

// MarkerStats reads the marker manager's queues.
func (c *TransactionCoordinator) MarkerStats() MarkerStats {
	m := c.markers
	if m == nil {
		return MarkerStats{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return MarkerStats{UnknownDestinationQueueSize: len(m.queues[unknownBroker]), LogAppendRetryQueueSize: len(m.appendRetries)}
}
