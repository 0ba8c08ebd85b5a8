package logstore

import (
	"testing"
	"time"
)

// A dynamic producer.id.expiration.ms reaches a live log's producer state at its next
// expiry check, and logs created afterwards.
func TestSetProducerIDExpirationLive(t *testing.T) {
	clock := newFakeClock()
	cfg := testManagerConfig(t, clock, t.TempDir())
	cfg.ProducerIDExpiration = time.Hour
	cfg.ProducerIDExpirationCheckInterval = 5 * time.Millisecond
	m := openTestManager(t, cfg)
	l, err := m.GetOrCreateLog(TopicPartition{"idle", 0}, [16]byte{}, logConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	mustAppendIdem(t, l, 7, 0, 0, 1, clock.Now().UnixMilli())
	clock.Advance(2 * time.Minute)
	m.Start(t.Context())
	time.Sleep(50 * time.Millisecond) // several checks with the 1 h expiration
	if _, ok := producerState(t, l, 7); !ok {
		t.Fatal("producer expired before the change")
	}
	m.SetProducerIDExpiration(time.Minute)
	if got := m.ProducerIDExpiration(); got != time.Minute {
		t.Fatalf("ProducerIDExpiration = %v", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := producerState(t, l, 7); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("idle producer not expired after the expiration was lowered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	later, err := m.GetOrCreateLog(TopicPartition{"later", 0}, [16]byte{}, logConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	later.mu.Lock()
	got := later.producerState.expiration()
	later.mu.Unlock()
	if got != time.Minute.Milliseconds() {
		t.Fatalf("a log created after the change expires after %d ms", got)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
}
