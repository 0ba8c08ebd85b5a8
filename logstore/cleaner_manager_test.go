package logstore

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var compactedOverrides = map[string]string{"cleanup.policy": "compact", "segment.bytes": "300",
	"delete.retention.ms": "1000", "min.cleanable.dirty.ratio": "0.01"}

// compactedTopicConfig is what the broker passes as ManagerConfig.TopicConfig (from
// /config/topics): logs found at start get their topic's overrides.
func compactedTopicConfig(topic string) map[string]string {
	if topic == "compacted" {
		return compactedOverrides
	}
	return nil
}

// compactedLog creates a compacted log with small segments and fills it: keys k0..k4
// written rounds times, then one more record so the last round is not in the active segment.
func compactedLog(t *testing.T, m *Manager, clock *fakeClock, rounds int) *Log {
	l, err := m.GetOrCreateLog(TopicPartition{"compacted", 0}, [16]byte{}, logConfig(t, compactedOverrides))
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < rounds; r++ {
		for k := 0; k < 5; k++ {
			v := fmt.Sprintf("r%d", r)
			if r == rounds-1 && k == 4 {
				v = "<null>" // a tombstone
			}
			produce(t, l, clock.Now().UnixMilli(), fmt.Sprintf("k%d", k), v)
		}
	}
	produce(t, l, clock.Now().UnixMilli(), "tail", "x")
	l.UpdateHighWatermark(l.LogEndOffset())
	return l
}

// latestPerKey reduces "off:key=value" lines to key=value of the last occurrence.
func latestPerKey(lines []string) string {
	m := map[string]string{}
	for _, s := range lines {
		kv := s[strings.Index(s, ":")+1:]
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestCleanerOnRealLog(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	cfg := testManagerConfig(t, clock, d)
	cfg.TopicConfig = compactedTopicConfig
	m := openTestManager(t, cfg)
	l := compactedLog(t, m, clock, 6)
	before := readAll(t, l)
	leo := l.LogEndOffset()
	if len(l.Segments()) < 4 {
		t.Fatalf("want several segments, have %d", len(l.Segments()))
	}
	if !m.cleaner.cleanOnce() {
		t.Fatal("dirty compacted log not cleaned")
	}
	after := readAll(t, l)
	if latestPerKey(after) != latestPerKey(before) {
		t.Fatalf("latest values changed:\n%s\n%s", latestPerKey(before), latestPerKey(after))
	}
	if len(after) >= len(before) || l.LogEndOffset() != leo {
		t.Fatalf("nothing removed (%d -> %d records) or LEO moved", len(before), len(after))
	}
	// Below the cleaned end each key appears once; offsets only increase.
	cp, err := ReadOffsetCheckpoint(OSFS{}, filepath.Join(d, CleanerCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	end := cp[l.TopicPartition()]
	if end <= 0 {
		t.Fatalf("cleaner checkpoint %v", cp)
	}
	seen := map[string]bool{}
	prev := int64(-1)
	for _, s := range after {
		var off int64
		fmt.Sscanf(s, "%d:", &off)
		if off <= prev {
			t.Fatalf("offsets not increasing: %v", after)
		}
		prev = off
		key := s[strings.Index(s, ":")+1 : strings.Index(s, "=")]
		if off < end && seen[key] {
			t.Fatalf("key %s twice below the cleaned end %d: %v", key, end, after)
		}
		seen[key] = true
	}
	// Nothing more to do until new dirty data arrives.
	if m.cleaner.cleanOnce() {
		t.Fatal("cleaned again with no new dirty data")
	}
	// The swapped-out segments wait as .deleted, then go.
	if len(segmentFiles(t, l.Dir(), ".deleted")) == 0 {
		t.Fatal("no .deleted files after the swap")
	}
	clock.Advance(2 * time.Minute)
	m.processDueDeletes()
	if del := segmentFiles(t, l.Dir(), ".deleted"); len(del) != 0 {
		t.Fatalf("left %v", del)
	}
	// Tombstone expiry: new dirty data after delete.retention.ms drops k4's tombstone.
	for k := 0; k < 3; k++ {
		produce(t, l, clock.Now().UnixMilli(), fmt.Sprintf("n%d", k), "v")
	}
	produce(t, l, clock.Now().UnixMilli(), "tail2", "x")
	l.UpdateHighWatermark(l.LogEndOffset())
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if !m.cleaner.cleanOnce() {
		t.Fatal("second pass did not run")
	}
	// k4's tombstone was dirty in this pass: it is kept, now with a delete horizon.
	if !strings.Contains(fmt.Sprint(readAll(t, l)), "k4=<null>") {
		t.Fatal("tombstone dropped before its delete horizon")
	}
	produce(t, l, clock.Now().UnixMilli(), "n9", "v")
	produce(t, l, clock.Now().UnixMilli(), "tail3", "x")
	l.UpdateHighWatermark(l.LogEndOffset())
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if !m.cleaner.cleanOnce() {
		t.Fatal("third pass did not run")
	}
	for _, s := range readAll(t, l) {
		if strings.HasSuffix(s, "=<null>") {
			t.Fatalf("tombstone survived delete.retention.ms: %s", s)
		}
	}
	final := readAll(t, l)
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	m = openTestManager(t, cfg)
	defer m.Shutdown()
	l, _ = m.GetLog(TopicPartition{"compacted", 0})
	if got := readAll(t, l); fmt.Sprint(got) != fmt.Sprint(final) {
		t.Fatalf("after reopen:\n%v\nwant\n%v", got, final)
	}
}

// TestCleanerCrashMidClean stops a cleaning pass at each step of the .cleaned -> .swap ->
// rename protocol as if the process died, restarts, and checks the log reads back whole:
// same end offset, same latest value per key, no leftovers.
func TestCleanerCrashMidClean(t *testing.T) {
	for _, point := range []string{"cleaned", "swap", "old-deleted"} {
		t.Run(point, func(t *testing.T) {
			clock := newFakeClock()
			d := t.TempDir()
			cfg := testManagerConfig(t, clock, d)
			cfg.TopicConfig = compactedTopicConfig
			m := openTestManager(t, cfg)
			l := compactedLog(t, m, clock, 6)
			before := readAll(t, l)
			leo := l.LogEndOffset()
			testCleanerCrash = func(p string) bool { return p == point }
			m.cleaner.cleanOnce()
			testCleanerCrash = nil
			m.crash()

			m = openTestManager(t, cfg)
			defer m.Shutdown()
			l, ok := m.GetLog(TopicPartition{"compacted", 0})
			if !ok || l.LogEndOffset() != leo {
				t.Fatalf("after crash at %s: ok=%v LEO %d want %d", point, ok, l.LogEndOffset(), leo)
			}
			after := readAll(t, l)
			if latestPerKey(after) != latestPerKey(before) {
				t.Fatalf("latest values differ after crash at %s:\n%s\n%s", point, latestPerKey(before), latestPerKey(after))
			}
			switch point {
			case "cleaned":
				if fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("crash before .swap must leave the old log")
				}
			default:
				if len(after) >= len(before) {
					t.Fatalf("crash after .swap must complete the swap: %d -> %d records", len(before), len(after))
				}
			}
			for _, suf := range []string{".cleaned", ".swap", ".deleted"} {
				if left := segmentFiles(t, l.Dir(), suf); len(left) != 0 {
					t.Fatalf("leftover %s files: %v", suf, left)
				}
			}
			// And the log cleans fine afterwards.
			l.UpdateHighWatermark(l.LogEndOffset()) // no hw checkpoint survived the crash
			if point == "cleaned" && !m.cleaner.cleanOnce() {
				t.Fatal("no clean after recovery")
			}
		})
	}
}

// TestCleanerAbortWaits: deleting a log waits for a cleaning or retention run on it.
func TestCleanerAbortWaits(t *testing.T) {
	clock := newFakeClock()
	m := openTestManager(t, testManagerConfig(t, clock, t.TempDir()))
	defer m.Shutdown()
	tp := TopicPartition{"busy", 0}
	if !m.cleaner.tryPause(tp) {
		t.Fatal("tryPause")
	}
	if m.cleaner.tryPause(tp) {
		t.Fatal("paused twice")
	}
	done := make(chan struct{})
	go func() { m.cleaner.abort(tp); close(done) }()
	select {
	case <-done:
		t.Fatal("abort returned while the log was in progress")
	case <-time.After(50 * time.Millisecond):
	}
	if !m.cleaner.isAborted(tp) {
		t.Fatal("not marked aborted")
	}
	m.cleaner.resume(tp)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("abort did not return after resume")
	}
}

// TestConcurrentCheckpointWrites: tickers and DeleteLog write the same files at once; they
// must not share a .tmp and take the dir offline.
func TestConcurrentCheckpointWrites(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	m := openTestManager(t, testManagerConfig(t, clock, d))
	defer m.Shutdown()
	for p := int32(0); p < 8; p++ {
		if _, err := m.GetOrCreateLog(TopicPartition{"cp", p}, [16]byte{}, logConfig(t, nil)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				m.checkpointRecoveryPoints()
				m.checkpointHighWatermarks()
				m.checkpointLogStartOffsets()
			}
			m.DeleteLog(TopicPartition{"cp", int32(g)})
		}(g)
	}
	wg.Wait()
	if off := m.OfflineDirs(); len(off) != 0 {
		t.Fatalf("dir went offline: %v", off)
	}
	rp, err := ReadOffsetCheckpoint(OSFS{}, filepath.Join(d, RecoveryPointCheckpointFile))
	if err != nil || len(rp) != 4 {
		t.Fatalf("recovery points after deletes %v %v", rp, err)
	}
}

// TestCleanerRealLogModel: seeded random produce/roll/clean steps on a real Log, checked
// after every pass against the latest value per key; a tombstone that is the latest may be
// present or already expired, never an older value. Reopening reads the same records.
func TestCleanerRealLogModel(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	clock := newFakeClock()
	d := t.TempDir()
	cfg := testManagerConfig(t, clock, d)
	cfg.TopicConfig = compactedTopicConfig
	m := openTestManager(t, cfg)
	l, err := m.GetOrCreateLog(TopicPartition{"compacted", 0}, [16]byte{}, logConfig(t, compactedOverrides))
	if err != nil {
		t.Fatal(err)
	}
	latest := map[string]string{}
	passes := 0
	for step := 0; step < 150; step++ {
		clock.Advance(time.Duration(rng.Intn(300)) * time.Millisecond)
		switch op := rng.Intn(10); {
		case op < 7:
			var kvs []string
			for i := 0; i < 1+rng.Intn(4); i++ {
				k, v := fmt.Sprintf("k%d", rng.Intn(12)), fmt.Sprintf("s%d-%d", step, i)
				if rng.Intn(5) == 0 {
					v = "<null>"
				}
				kvs = append(kvs, k, v)
				latest[k] = v
			}
			produce(t, l, clock.Now().UnixMilli(), kvs...)
			l.UpdateHighWatermark(l.LogEndOffset())
		case op < 8:
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		default:
			if m.cleaner.cleanOnce() {
				passes++
			}
			got := map[string]string{}
			prev := int64(-1)
			for _, s := range readAll(t, l) {
				var off int64
				fmt.Sscanf(s, "%d:", &off)
				if off <= prev {
					t.Fatalf("seed %d: offsets not increasing at %s", seed, s)
				}
				prev = off
				kv := s[strings.Index(s, ":")+1:]
				k, v, _ := strings.Cut(kv, "=")
				got[k] = v
			}
			for k, want := range latest {
				if g, ok := got[k]; want == "<null>" {
					if ok && g != "<null>" {
						t.Fatalf("seed %d step %d: deleted key %s reads %s", seed, step, k, g)
					}
				} else if g != want {
					t.Fatalf("seed %d step %d: key %s reads %q, want %q", seed, step, k, g, want)
				}
			}
		}
	}
	if passes == 0 {
		t.Fatalf("seed %d: no cleaning pass ran", seed)
	}
	before := readAll(t, l)
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	m = openTestManager(t, cfg)
	defer m.Shutdown()
	l, _ = m.GetLog(TopicPartition{"compacted", 0})
	if after := readAll(t, l); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("seed %d: reopen changed the log", seed)
	}
}

// TestTruncatePullsBackCleanerCheckpoint: follower truncation below the cleaned end moves
// the first dirty offset back, so offsets appended again are cleaned again.
func TestTruncatePullsBackCleanerCheckpoint(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	cfg := testManagerConfig(t, clock, d)
	cfg.TopicConfig = compactedTopicConfig
	m := openTestManager(t, cfg)
	defer m.Shutdown()
	l := compactedLog(t, m, clock, 6)
	if !m.cleaner.cleanOnce() {
		t.Fatal("not cleaned")
	}
	tp := l.TopicPartition()
	end, _ := m.cleaner.checkpointOf(d, tp)
	if end < 10 {
		t.Fatalf("cleaned end %d", end)
	}
	if err := m.TruncateTo(tp, 5); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() > 5 {
		t.Fatalf("LEO %d after truncation to 5", l.LogEndOffset())
	}
	cp, err := ReadOffsetCheckpoint(OSFS{}, filepath.Join(d, CleanerCheckpointFile))
	if err != nil || cp[tp] > 5 {
		t.Fatalf("cleaner checkpoint %v after truncation to 5 (was %d): %v", cp, end, err)
	}
	rp, _ := ReadOffsetCheckpoint(OSFS{}, filepath.Join(d, RecoveryPointCheckpointFile))
	if rp[tp] > l.LogEndOffset() {
		t.Fatalf("recovery point %d above LEO %d", rp[tp], l.LogEndOffset())
	}
	if err := m.TruncateFullyAndStartAt(tp, 100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 {
		t.Fatalf("start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
	if err := m.TruncateTo(TopicPartition{"nope", 0}, 1); err == nil {
		t.Fatal("truncate of a missing log succeeded")
	}
}
