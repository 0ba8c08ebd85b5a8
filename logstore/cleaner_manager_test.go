package logstore

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
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
