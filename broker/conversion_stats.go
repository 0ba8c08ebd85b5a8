package broker

// conversion_stats.go — counts of message-format conversions, as Kafka's BrokerTopicStats
// keeps them (ProduceMessageConversionsPerSec, FetchMessageConversionsPerSec) and
// RequestMetrics' MessageConversionsTimeMs / TemporaryMemoryBytes per request: an old
// producer's message sets up-converted to record batches (Produce v0-v2) and record
// batches down-converted for an old consumer (Fetch v0-v3).

import "sync/atomic"

// ConversionStats are cumulative counters, safe for concurrent use.
type ConversionStats struct {
	// ProduceRequests and FetchRequests count requests that needed a conversion.
	ProduceRequests atomic.Int64
	FetchRequests   atomic.Int64
	// ProduceMessages and FetchMessages count the records converted.
	ProduceMessages atomic.Int64
	FetchMessages   atomic.Int64
	// TimeNanos is the time spent converting, both directions.
	TimeNanos atomic.Int64
	// TemporaryBytes is the memory the conversions allocated for converted data.
	TemporaryBytes atomic.Int64
}

// ConversionSnapshot is a copy of ConversionStats' counters.
type ConversionSnapshot struct {
	ProduceRequests, FetchRequests, ProduceMessages, FetchMessages, TimeNanos, TemporaryBytes int64
}

// Snapshot returns the current counts.
func (s *ConversionStats) Snapshot() ConversionSnapshot {
	return ConversionSnapshot{
		ProduceRequests: s.ProduceRequests.Load(), FetchRequests: s.FetchRequests.Load(),
		ProduceMessages: s.ProduceMessages.Load(), FetchMessages: s.FetchMessages.Load(),
		TimeNanos: s.TimeNanos.Load(), TemporaryBytes: s.TemporaryBytes.Load(),
	}
}
