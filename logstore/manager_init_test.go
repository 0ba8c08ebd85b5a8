package logstore

import "testing"

// InitializingLog/TopicConfigUpdated/FinishedInitializingLog: a change flags only the
// creations in progress for its topic, each creation has its own flag, and a flag set again
// after a reload asks for another reload.
func TestLogInitTracksTopicConfigChanges(t *testing.T) {
	m := openTestManager(t, testManagerConfig(t, newFakeClock(), t.TempDir()))
	defer m.Shutdown()
	a := m.InitializingLog(TopicPartition{"a", 0})
	a2 := m.InitializingLog(TopicPartition{"a", 0}) // an overlapping creation of the same partition
	b := m.InitializingLog(TopicPartition{"b", 0})

	m.TopicConfigUpdated("a")
	if m.FinishedInitializingLog(b) {
		t.Fatal("b flagged by a change to topic a")
	}
	if !m.FinishedInitializingLog(a) {
		t.Fatal("a not flagged by a change to its topic")
	}
	m.TopicConfigUpdated("a") // lands during a's reload
	if !m.FinishedInitializingLog(a) {
		t.Fatal("a change during the reload did not ask for another")
	}
	if m.FinishedInitializingLog(a) {
		t.Fatal("a still flagged after its reloads")
	}
	if !m.FinishedInitializingLog(a2) || m.FinishedInitializingLog(a2) {
		t.Fatal("the overlapping creation lost its flag to the other one's reload")
	}
	m.TopicConfigUpdated("a") // nothing in progress: no effect, no leak
	m.mu.Lock()
	n := len(m.mu.initializing)
	m.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d creations still tracked after all finished", n)
	}
}
