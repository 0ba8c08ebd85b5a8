package logstore

import (
	"math"
	"testing"
	"time"
)

func TestSetBrokerPropsReachesLiveLogsTopicOverridesWin(t *testing.T) {
	clock := newFakeClock()
	cfg := testManagerConfig(t, clock, t.TempDir())
	cfg.BrokerProps = map[string]string{"log.retention.ms": "1000", "log.segment.bytes": "100000"}
	m := openTestManager(t, cfg)
	t.Cleanup(func() { m.Shutdown() })

	plain, err := m.TopicLogConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.GetOrCreateLog(TopicPartition{"plain", 0}, [16]byte{}, plain)
	if err != nil {
		t.Fatal(err)
	}
	over, err := m.TopicLogConfig(map[string]string{"retention.ms": "5000"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.GetOrCreateLog(TopicPartition{"override", 0}, [16]byte{}, over)
	if err != nil {
		t.Fatal(err)
	}
	li := m.InitializingLog(TopicPartition{"creating", 0})

	m.SetBrokerProps(map[string]string{"log.retention.ms": "2000", "log.segment.bytes": "200000"})

	if got := a.Config(); got.RetentionMs != 2000 || got.SegmentBytes != 200000 || got.Source("retention.ms") != SourceStaticBroker {
		t.Fatalf("log without overrides: retention %d segment %d source %d; want the new defaults", got.RetentionMs, got.SegmentBytes, got.Source("retention.ms"))
	}
	if got := b.Config(); got.RetentionMs != 5000 || got.SegmentBytes != 200000 || got.Source("retention.ms") != SourceTopic {
		t.Fatalf("log with retention override: retention %d segment %d; want 5000 (override) and 200000 (new default)", got.RetentionMs, got.SegmentBytes)
	}
	if got := b.Config().Overrides(); len(got) != 1 || got["retention.ms"] != "5000" {
		t.Fatalf("overrides after reconfigure %v", got)
	}
	if c, _ := m.TopicLogConfig(nil); c.RetentionMs != 2000 {
		t.Fatalf("logs created later: retention %d, want 2000", c.RetentionMs)
	}
	if c := m.configFor("fresh"); c.RetentionMs != 2000 {
		t.Fatalf("configFor after reconfigure: retention %d, want 2000", c.RetentionMs)
	}
	if !m.FinishedInitializingLog(li) {
		t.Fatal("a log being created must be told to re-read its config after new broker defaults")
	}
	if m.FinishedInitializingLog(li) {
		t.Fatal("the notice is consumed once")
	}
}

func TestCleanerReconfigureRestartsWithNewBackoff(t *testing.T) {
	clock := newFakeClock()
	cfg := testManagerConfig(t, clock, t.TempDir())
	cfg.TopicConfig = compactedTopicConfig
	cfg.CleanerEnable = true
	cfg.CleanerBackoff = time.Hour // never within the test unless reconfigured
	m := openTestManager(t, cfg)
	t.Cleanup(func() { m.Shutdown() })
	l := compactedLog(t, m, clock, 6)
	dir := m.Dirs()[0]
	m.Start(t.Context())

	if s := m.CleanerSettings(); s.Threads != 1 || s.Backoff != time.Hour {
		t.Fatalf("start-up settings %+v", s)
	}
	time.Sleep(50 * time.Millisecond)
	if _, ok := m.cleaner.checkpointOf(dir, l.TopicPartition()); ok {
		t.Fatal("cleaned before the reconfiguration: the test proves nothing")
	}
	if err := m.ValidateCleanerSettings(CleanerSettings{Threads: 3}); err == nil {
		t.Fatal("3 threads from 1 must be refused (more than double)")
	}
	if err := m.ValidateCleanerSettings(CleanerSettings{Threads: 0}); err == nil {
		t.Fatal("0 threads must be refused")
	}
	next := CleanerSettingsFromProps(map[string]string{"log.cleaner.threads": "2", "log.cleaner.backoff.ms": "5",
		"log.cleaner.dedupe.buffer.size": "1048576", "log.cleaner.io.buffer.load.factor": "0.45"})
	if err := m.ValidateCleanerSettings(next); err != nil {
		t.Fatal(err)
	}
	m.ReconfigureCleaner(next)
	if got := m.cleaner.offsetMapBytes(); got != 1048576/2/2 {
		t.Fatalf("offset map bytes %d: want the buffer split over 2 threads at half the default load factor", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	// The cleaner checkpoint moves once a pass is done (Segments() is not read here: it
	// races with a pass swapping segments).
	for {
		if _, ok := m.cleaner.checkpointOf(dir, l.TopicPartition()); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("log not cleaned after the backoff became 5 ms")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s := m.CleanerSettings(); s.Threads != 2 {
		t.Fatalf("settings after reconfigure %+v", s)
	}
	if err := m.ValidateCleanerSettings(CleanerSettings{Threads: 5}); err == nil {
		t.Fatal("5 threads from 2 must be refused")
	}
}

func TestCleanerThrottler(t *testing.T) {
	now := time.Unix(0, 0)
	var slept []time.Duration
	th := &ioThrottler{now: func() time.Time { return now }, sleep: func(d time.Duration) { slept = append(slept, d); now = now.Add(d) }}
	th.maybeThrottle(1 << 20) // unbounded: nothing
	th.setRate(math.MaxFloat64)
	th.maybeThrottle(1 << 20)
	if len(slept) != 0 {
		t.Fatalf("slept %v without a rate", slept)
	}
	th = &ioThrottler{now: th.now, sleep: th.sleep}
	th.setRate(1000) // bytes/s
	th.maybeThrottle(100)
	now = now.Add(400 * time.Millisecond)
	th.maybeThrottle(900) // 1000 bytes in 400 ms: should have taken 1 s
	if len(slept) != 1 || slept[0] != 600*time.Millisecond {
		t.Fatalf("slept %v, want [600ms]", slept)
	}
	now = now.Add(400 * time.Millisecond)
	th.maybeThrottle(100) // 100 bytes in 400 ms: under the rate
	if len(slept) != 1 {
		t.Fatalf("slept %v under the rate", slept)
	}
}

func TestRecoveryThreadsPerDirLive(t *testing.T) {
	cfg := testManagerConfig(t, newFakeClock(), t.TempDir())
	m := openTestManager(t, cfg)
	if got := m.recoveryThreadsPerDir(); got != 2 {
		t.Fatalf("recovery threads %d, want the configured 2", got)
	}
	m.SetRecoveryThreadsPerDir(4)
	if got := m.recoveryThreadsPerDir(); got != 4 {
		t.Fatalf("recovery threads %d, want 4", got)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
}

func TestCleanerPassIsThrottled(t *testing.T) {
	clock := newFakeClock()
	cfg := testManagerConfig(t, clock, t.TempDir())
	cfg.TopicConfig = compactedTopicConfig
	m := openTestManager(t, cfg)
	t.Cleanup(func() { m.Shutdown() })
	compactedLog(t, m, clock, 6)
	now := time.Unix(0, 0)
	var slept time.Duration
	m.cleaner.throttler.now = func() time.Time { now = now.Add(100 * time.Millisecond); return now }
	m.cleaner.throttler.sleep = func(d time.Duration) { slept += d }
	m.cleaner.throttler.setRate(100) // bytes/s: a pass of ~2 KiB read + written must wait
	if !m.cleaner.cleanOnce() {
		t.Fatal("nothing cleaned")
	}
	if slept <= 0 {
		t.Fatal("the pass was not throttled at 100 bytes/s")
	}
	t.Logf("throttled for %v", slept)
}
