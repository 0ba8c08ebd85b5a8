package logstore

import (
	"testing"
	"time"
)

// The manager passes producer.id.expiration.ms to its logs and runs the periodic expiry
// task, so a producer idle on a partition with no appends is forgotten (Kafka's
// PeriodicProducerExpirationCheck).
func TestManagerExpiresIdleProducers(t *testing.T) {
	clock := newFakeClock()
	cfg := testManagerConfig(t, clock, t.TempDir())
	cfg.ProducerIDExpiration = time.Minute // the 1-day default would keep the producer
	cfg.ProducerIDExpirationCheckInterval = 5 * time.Millisecond
	m := openTestManager(t, cfg)
	l, err := m.GetOrCreateLog(TopicPartition{"idle", 0}, [16]byte{}, logConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	mustAppendIdem(t, l, 7, 0, 0, 1, clock.Now().UnixMilli())
	if _, ok := producerState(t, l, 7); !ok {
		t.Fatal("producer 7 not tracked")
	}
	clock.Advance(2 * time.Minute)
	m.Start(t.Context())
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := producerState(t, l, 7); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("idle producer not expired by the manager's periodic check")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
}
