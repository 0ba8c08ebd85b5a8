package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

// fakeClock is an injectable clock for retention, deletion delays and the cleaner.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// tWriter sends log output to t.Log so only failures print.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testLogger returns an entry logging to t.Log and a hook recording every entry.
func testLogger(t testing.TB) (*logrus.Entry, *logtest.Hook) {
	l := logrus.New()
	l.SetOutput(tWriter{t})
	l.SetLevel(logrus.DebugLevel)
	return logrus.NewEntry(l), logtest.NewLocal(l)
}

func testManagerConfig(t testing.TB, clock *fakeClock, dirs ...string) ManagerConfig {
	log, _ := testLogger(t)
	return ManagerConfig{Dirs: dirs, BrokerID: 1, ClusterID: "test-cluster", Clock: clock.Now, Log: log,
		RecoveryThreadsPerDir: 2}
}

func openTestManager(t testing.TB, cfg ManagerConfig) *Manager {
	t.Helper()
	m, err := OpenManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func logConfig(t testing.TB, overrides map[string]string) LogConfig {
	t.Helper()
	c, err := NewLogConfig(nil, overrides)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// produce appends one batch of n records with timestamp ts (keys k<i> unless noKeys).
func produce(t testing.TB, l *Log, ts int64, kvs ...string) AppendInfo {
	t.Helper()
	rs := make([]recordbatch.Record, 0, len(kvs)/2)
	for i := 0; i+1 < len(kvs); i += 2 {
		r := recordbatch.Record{OffsetDelta: int32(i / 2), Key: []byte(kvs[i])}
		if kvs[i+1] != "<null>" {
			r.Value = []byte(kvs[i+1])
		}
		rs = append(rs, r)
	}
	h := recordbatch.Header{LastOffsetDelta: int32(len(rs) - 1), BaseTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	b, err := recordbatch.Build(h, rs, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	info, err := l.AppendAsLeader(b, 0)
	if err != nil {
		t.Fatalf("append to %s: %v", l.TopicPartition(), err)
	}
	return info
}

// readAll returns "offset:key=value" for every record from the log start to the LEO.
func readAll(t testing.TB, l *Log) []string {
	t.Helper()
	var out []string
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		ri, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read %s at %d: %v", l.TopicPartition(), off, err)
		}
		data, err := ri.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			break
		}
		next := off
		for len(data) > 0 {
			b, rest, err := recordbatch.Next(data)
			if err != nil {
				break // partial trailing batch
			}
			data = rest
			err = b.ForEachRecord(false, func(r *recordbatch.Record) error {
				o := b.BaseOffset() + int64(r.OffsetDelta)
				if o >= off {
					v := "<null>"
					if r.Value != nil {
						v = string(r.Value)
					}
					out = append(out, fmt.Sprintf("%d:%s=%s", o, r.Key, v))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			next = b.NextOffset()
		}
		if next <= off {
			break
		}
		off = next
	}
	return out
}

func TestManagerCreateShutdownReopen(t *testing.T) {
	clock := newFakeClock()
	d1, d2 := t.TempDir(), t.TempDir()
	cfg := testManagerConfig(t, clock, d1, d2)
	m := openTestManager(t, cfg)
	id := [16]byte{1, 2, 3}
	perDir := map[string]int{}
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"orders", p}, id, logConfig(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		perDir[filepath.Dir(l.Dir())]++
		produce(t, l, clock.Now().UnixMilli(), "a", "1", "b", "2")
		l.UpdateHighWatermark(1)
	}
	if perDir[d1] != 2 || perDir[d2] != 2 {
		t.Fatalf("new logs not spread over the dir with fewest partitions: %v", perDir)
	}
	again, err := m.GetOrCreateLog(TopicPartition{"orders", 0}, id, logConfig(t, nil))
	if err != nil || again.LogEndOffset() != 2 {
		t.Fatalf("get existing: %v", err)
	}
	if _, err := m.GetOrCreateLog(TopicPartition{"orders", 0}, [16]byte{9}, logConfig(t, nil)); err == nil {
		t.Fatal("inconsistent topic id accepted")
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{d1, d2} {
		if raw, err := os.ReadFile(filepath.Join(d, CleanShutdownFile)); err != nil || string(raw) != `{"version":0,"brokerEpoch":-1}` {
			t.Fatalf("clean shutdown marker in %s: %q %v", d, raw, err)
		}
		rp, err := ReadOffsetCheckpoint(OSFS{}, filepath.Join(d, RecoveryPointCheckpointFile))
		if err != nil || len(rp) != 2 {
			t.Fatalf("recovery points %v %v", rp, err)
		}
		for tp, off := range rp {
			if off != 2 {
				t.Fatalf("recovery point of %s = %d, want 2 (flushed at shutdown)", tp, off)
			}
		}
		hw, _ := ReadOffsetCheckpoint(OSFS{}, filepath.Join(d, HighWatermarkCheckpointFile))
		for tp, off := range hw {
			if off != 1 {
				t.Fatalf("hw of %s = %d", tp, off)
			}
		}
		if _, err := os.Stat(filepath.Join(d, MetaPropertiesFile)); err != nil {
			t.Fatal(err)
		}
	}

	m2 := openTestManager(t, cfg)
	defer m2.Shutdown()
	if n := len(m2.AllLogs()); n != 4 {
		t.Fatalf("reopened %d logs", n)
	}
	for _, d := range []string{d1, d2} {
		if _, err := os.Stat(filepath.Join(d, CleanShutdownFile)); !os.IsNotExist(err) {
			t.Fatalf("clean shutdown marker not deleted at start in %s", d)
		}
	}
	l, ok := m2.GetLog(TopicPartition{"orders", 3})
	if !ok || l.LogEndOffset() != 2 || l.HighWatermark() != 1 || l.TopicID() != id {
		t.Fatalf("reopened log: ok=%v", ok)
	}
	if got := fmt.Sprint(readAll(t, l)); got != "[0:a=1 1:b=2]" {
		t.Fatalf("read after reopen %s", got)
	}
}

func TestManagerSecondOpenLockedAndMetaMismatch(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	cfg := testManagerConfig(t, clock, d)
	m := openTestManager(t, cfg)
	_, err := OpenManager(cfg)
	if !errors.Is(err, ErrLogDirLocked) || !strings.Contains(err.Error(), d) {
		t.Fatalf("second manager on the same dir: %v", err)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	bad := cfg
	bad.BrokerID = 2
	if _, err := OpenManager(bad); !errors.Is(err, ErrMetaMismatch) || !strings.Contains(err.Error(), "broker.id") {
		t.Fatalf("broker id mismatch: %v", err)
	}
	bad = cfg
	bad.ClusterID = "other"
	if _, err := OpenManager(bad); !errors.Is(err, ErrMetaMismatch) {
		t.Fatalf("cluster id mismatch: %v", err)
	}
	// The refused starts released their locks.
	m = openTestManager(t, cfg)
	m.Shutdown()
}

func TestManagerDeleteLog(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	m := openTestManager(t, testManagerConfig(t, clock, d))
	defer m.Shutdown()
	tp := TopicPartition{"gone", 0}
	l, err := m.GetOrCreateLog(tp, [16]byte{}, logConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	produce(t, l, clock.Now().UnixMilli(), "k", "v")
	if err := m.DeleteLog(tp); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.GetLog(tp); ok {
		t.Fatal("deleted log still listed")
	}
	ents, _ := os.ReadDir(d)
	re := regexp.MustCompile(`^gone-0\.[0-9a-f]{32}-delete$`)
	var renamed string
	for _, e := range ents {
		if re.MatchString(e.Name()) {
			renamed = e.Name()
		}
		if e.Name() == "gone-0" {
			t.Fatal("partition dir not renamed")
		}
	}
	if renamed == "" {
		t.Fatalf("no -delete dir in %v", ents)
	}
	m.processDueDeletes()
	if _, err := os.Stat(filepath.Join(d, renamed)); err != nil {
		t.Fatal("deleted before file.delete.delay.ms")
	}
	clock.Advance(61 * time.Second)
	m.processDueDeletes()
	if _, err := os.Stat(filepath.Join(d, renamed)); !os.IsNotExist(err) {
		t.Fatalf("not removed after the delay: %v", err)
	}
	if long := logDeleteDirName(TopicPartition{strings.Repeat("t", 249), 7}); len(long) != 255 {
		t.Fatalf("delete dir name length %d", len(long))
	}
}

// segmentFiles lists a partition dir's files with the given suffix.
func segmentFiles(t testing.TB, dir, suffix string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// retentionLog creates a log whose every batch gets its own segment (segment.bytes tiny).
func retentionLog(t *testing.T, m *Manager, overrides map[string]string) *Log {
	o := map[string]string{"segment.bytes": "100"}
	for k, v := range overrides {
		o[k] = v
	}
	l, err := m.GetOrCreateLog(TopicPartition{"ret", 0}, [16]byte{}, logConfig(t, o))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestRetentionByTime(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	m := openTestManager(t, testManagerConfig(t, clock, d))
	defer m.Shutdown()
	l := retentionLog(t, m, map[string]string{"retention.ms": "3600000"})
	now := clock.Now().UnixMilli()
	produce(t, l, now-3*3600_000, "a", "old1") // 0
	produce(t, l, now-2*3600_000, "b", "old2") // 1
	produce(t, l, now-10*60_000, "c", "new")   // 2
	produce(t, l, now, "d", "newest")          // 3
	if n := len(l.Segments()); n != 4 {
		t.Fatalf("want one segment per batch, have %d", n)
	}
	// Nothing goes past the high watermark.
	if n := m.cleanupLogs(); n != 0 {
		t.Fatalf("deleted %d segments above the high watermark", n)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if n := m.cleanupLogs(); n != 2 {
		t.Fatalf("deleted %d segments, want 2", n)
	}
	if l.LogStartOffset() != 2 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	if got := fmt.Sprint(readAll(t, l)); got != "[2:c=new 3:d=newest]" {
		t.Fatalf("left %s", got)
	}
	if del := segmentFiles(t, l.Dir(), ".deleted"); len(del) == 0 {
		t.Fatal("no .deleted files pending")
	}
	clock.Advance(61 * time.Second)
	m.processDueDeletes()
	if del := segmentFiles(t, l.Dir(), ".deleted"); len(del) != 0 {
		t.Fatalf(".deleted files left after file.delete.delay.ms: %v", del)
	}
	if logs := segmentFiles(t, l.Dir(), ".log"); len(logs) != 2 {
		t.Fatalf("segment files %v", logs)
	}
}

func TestRetentionAllExpiredRollsFirst(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	m := openTestManager(t, testManagerConfig(t, clock, d))
	defer m.Shutdown()
	l := retentionLog(t, m, map[string]string{"retention.ms": "1000"})
	now := clock.Now().UnixMilli()
	for i := 0; i < 3; i++ {
		produce(t, l, now-10_000, "k", fmt.Sprint(i))
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if n := m.cleanupLogs(); n != 3 {
		t.Fatalf("deleted %d, want 3", n)
	}
	segs := l.Segments()
	if len(segs) != 1 || segs[0].BaseOffset != 3 || segs[0].Size != 0 || !segs[0].Active {
		t.Fatalf("want one empty active segment at 3, have %+v", segs)
	}
	if l.LogStartOffset() != 3 || l.LogEndOffset() != 3 {
		t.Fatalf("start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
	// The empty active segment is never deleted; appends continue at 3.
	if n := m.cleanupLogs(); n != 0 {
		t.Fatalf("deleted the empty active segment")
	}
	if info := produce(t, l, now, "k", "again"); info.FirstOffset != 3 {
		t.Fatalf("append after full expiry at %d", info.FirstOffset)
	}
}

func TestRetentionBySize(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	m := openTestManager(t, testManagerConfig(t, clock, d))
	defer m.Shutdown()
	l := retentionLog(t, m, nil)
	now := clock.Now().UnixMilli()
	for i := 0; i < 5; i++ {
		produce(t, l, now, "k", fmt.Sprint(i))
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	segSize := l.Segments()[0].Size
	// Keep at least 2 segments' worth: 5 segments, retention 2.5 segments -> delete 2.
	cfg := l.Config()
	cfg.RetentionBytes = segSize*2 + segSize/2
	l.SetConfig(cfg)
	if n := m.cleanupLogs(); n != 2 {
		t.Fatalf("deleted %d, want 2 (segment %d bytes, retention %d)", n, segSize, cfg.RetentionBytes)
	}
	if l.LogStartOffset() != 2 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	cfg.RetentionBytes = -1
	l.SetConfig(cfg)
	if n := m.cleanupLogs(); n != 0 {
		t.Fatalf("retention.bytes=-1 deleted %d", n)
	}
}

func TestRetentionByLogStartOffset(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	m := openTestManager(t, testManagerConfig(t, clock, d))
	l := retentionLog(t, m, map[string]string{"cleanup.policy": "compact"})
	now := clock.Now().UnixMilli()
	for i := 0; i < 4; i++ {
		produce(t, l, now-1e9, "k", fmt.Sprint(i)) // ancient, but compact-only: time does not apply
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if n := m.cleanupLogs(); n != 0 {
		t.Fatalf("compact-only log lost %d segments to time retention", n)
	}
	if err := l.MaybeIncrementLogStartOffset(2); err != nil { // DeleteRecords
		t.Fatal(err)
	}
	if n := m.cleanupLogs(); n != 2 {
		t.Fatalf("deleted %d, want 2", n)
	}
	if l.LogStartOffset() != 2 || l.Segments()[0].BaseOffset != 2 {
		t.Fatalf("start %d first segment %d", l.LogStartOffset(), l.Segments()[0].BaseOffset)
	}
	// The log start checkpoint is written at shutdown only for logs whose start is above
	// their first segment; here they are equal, so it is empty.
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	ls, _ := ReadOffsetCheckpoint(OSFS{}, filepath.Join(d, LogStartOffsetCheckpointFile))
	if len(ls) != 0 {
		t.Fatalf("log start checkpoint %v", ls)
	}
}

// TestLogStartCheckpointSurvivesRestart: a DeleteRecords start inside a segment comes back.
func TestLogStartCheckpointSurvivesRestart(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	cfg := testManagerConfig(t, clock, d)
	m := openTestManager(t, cfg)
	l, _ := m.GetOrCreateLog(TopicPartition{"s", 0}, [16]byte{}, logConfig(t, nil))
	produce(t, l, clock.Now().UnixMilli(), "a", "1", "b", "2", "c", "3")
	l.UpdateHighWatermark(3)
	if err := l.MaybeIncrementLogStartOffset(2); err != nil {
		t.Fatal(err)
	}
	m.checkpointLogStartOffsets()
	ls, _ := ReadOffsetCheckpoint(OSFS{}, filepath.Join(d, LogStartOffsetCheckpointFile))
	if ls[TopicPartition{"s", 0}] != 2 {
		t.Fatalf("checkpoint %v", ls)
	}
	m.Shutdown()
	m = openTestManager(t, cfg)
	defer m.Shutdown()
	l, _ = m.GetLog(TopicPartition{"s", 0})
	if l.LogStartOffset() != 2 {
		t.Fatalf("log start after restart %d", l.LogStartOffset())
	}
}

// TestDirOfflineOnIOError: a failed write takes the whole dir offline with an Error line
// naming it; its other logs answer ErrKafkaStorage; the other dir keeps serving; losing
// the last dir tells the broker to exit.
func TestDirOfflineOnIOError(t *testing.T) {
	clock := newFakeClock()
	d1, d2 := t.TempDir(), t.TempDir()
	efs := newErrorFS()
	log, hook := testLogger(t)
	offline := make(chan string, 4)
	allGone := make(chan struct{}, 1)
	cfg := ManagerConfig{Dirs: []string{d1, d2}, BrokerID: 1, Clock: clock.Now, Log: log, FS: efs,
		OnDirOffline: func(dir string) { offline <- dir }, OnAllDirsOffline: func() { allGone <- struct{}{} }}
	m := openTestManager(t, cfg)
	defer m.Shutdown()
	logs := map[string][]*Log{}
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"t", p}, [16]byte{}, logConfig(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		logs[filepath.Dir(l.Dir())] = append(logs[filepath.Dir(l.Dir())], l)
		produce(t, l, clock.Now().UnixMilli(), "k", "v")
	}
	victim := logs[d1][0]
	before := victim.LogEndOffset()
	efs.arm(d1, true, true)
	_, err := victim.AppendAsLeader(mustBatch(t, clock.Now().UnixMilli()), 0)
	if !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("append with failing write: %v", err)
	}
	if victim.LogEndOffset() != before {
		t.Fatal("failed append moved the log end offset")
	}
	select {
	case dir := <-offline:
		if dir != d1 {
			t.Fatalf("offline callback for %s", dir)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no OnDirOffline callback")
	}
	if got := m.OfflineDirs(); len(got) != 1 || got[0] != d1 {
		t.Fatalf("offline dirs %v", got)
	}
	found := false
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.ErrorLevel && e.Data["dir"] == d1 && strings.Contains(e.Message, "offline") {
			found = true
		}
	}
	if !found {
		t.Fatal("no Error log line naming the offline dir")
	}
	efs.disarm()
	// Its sibling in the same dir refuses too, though its own files are fine.
	if _, err := logs[d1][1].AppendAsLeader(mustBatch(t, clock.Now().UnixMilli()), 0); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("sibling in offline dir: %v", err)
	}
	if !m.LogDirOffline(logs[d1][1].TopicPartition()) {
		t.Fatal("LogDirOffline false")
	}
	// The other dir still works, and new logs go there.
	produce(t, l0(logs[d2]), clock.Now().UnixMilli(), "k", "v2")
	nl, err := m.GetOrCreateLog(TopicPartition{"new", 0}, [16]byte{}, logConfig(t, nil))
	if err != nil || filepath.Dir(nl.Dir()) != d2 {
		t.Fatalf("new log after d1 failed: %v", err)
	}
	// A failed checkpoint fsync takes the last dir offline: the broker must exit.
	efs.arm(d2, false, true)
	m.checkpointHighWatermarks()
	select {
	case <-allGone:
	case <-time.After(5 * time.Second):
		t.Fatal("no OnAllDirsOffline callback after the last dir failed")
	}
	efs.disarm()
	if _, err := m.GetOrCreateLog(TopicPartition{"new", 1}, [16]byte{}, logConfig(t, nil)); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("create with no dir left: %v", err)
	}
	// Shutdown writes no clean marker into failed dirs.
	m.Shutdown()
	for _, d := range []string{d1, d2} {
		if _, err := os.Stat(filepath.Join(d, CleanShutdownFile)); !os.IsNotExist(err) {
			t.Fatalf("clean shutdown marker written into failed dir %s", d)
		}
	}
}

func l0(ls []*Log) *Log { return ls[0] }

func mustBatch(t testing.TB, ts int64) []byte {
	b, err := recordbatch.Build(recordbatch.Header{BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]recordbatch.Record{{Key: []byte("x"), Value: []byte("y")}}, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestManagerUncleanRestartRecovers: without Shutdown (a crash), the next start finds no
// marker and the log is recovered from its files.
func TestManagerUncleanRestartRecovers(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	cfg := testManagerConfig(t, clock, d)
	m := openTestManager(t, cfg)
	l, _ := m.GetOrCreateLog(TopicPartition{"u", 0}, [16]byte{}, logConfig(t, nil))
	produce(t, l, clock.Now().UnixMilli(), "a", "1")
	produce(t, l, clock.Now().UnixMilli(), "b", "2")
	m.crash()
	m2 := openTestManager(t, cfg)
	defer m2.Shutdown()
	l, ok := m2.GetLog(TopicPartition{"u", 0})
	if !ok || l.LogEndOffset() != 2 {
		t.Fatalf("after crash: ok=%v", ok)
	}
	if got := fmt.Sprint(readAll(t, l)); got != "[0:a=1 1:b=2]" {
		t.Fatalf("read %s", got)
	}
}

// crash simulates a killed process: background tasks stop, files close, locks drop,
// nothing is flushed or checkpointed and no clean-shutdown marker is written.
func (m *Manager) crash() {
	m.mu.Lock()
	m.mu.shutdown = true
	cancel := m.bgCancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
	m.closeAllQuietly()
	m.unlockAll()
}

func TestManagerBackgroundTasksStop(t *testing.T) {
	clock := newFakeClock()
	d := t.TempDir()
	cfg := testManagerConfig(t, clock, d)
	cfg.HighWatermarkCheckpointInterval = 5 * time.Millisecond
	cfg.RetentionCheckInterval = 5 * time.Millisecond
	cfg.FlushCheckpointInterval = 5 * time.Millisecond
	cfg.StartOffsetCheckpointInterval = 5 * time.Millisecond
	cfg.FlushSchedulerInterval = 5 * time.Millisecond
	cfg.CleanerEnable = true
	cfg.CleanerBackoff = 5 * time.Millisecond
	goroutines := runtime.NumGoroutine()
	m := openTestManager(t, cfg)
	l, _ := m.GetOrCreateLog(TopicPartition{"bg", 0}, [16]byte{}, logConfig(t, map[string]string{"flush.ms": "0"}))
	produce(t, l, clock.Now().UnixMilli(), "a", "1")
	l.UpdateHighWatermark(1)
	m.Start(t.Context())
	deadline := time.Now().Add(5 * time.Second)
	for {
		hw, _ := ReadOffsetCheckpoint(OSFS{}, filepath.Join(d, HighWatermarkCheckpointFile))
		if hw[TopicPartition{"bg", 0}] == 1 && l.RecoveryPoint() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hw checkpoint %v, recovery point %d: background tasks did not run", hw, l.RecoveryPoint())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	// Every background goroutine is stopped and waited for by Shutdown. Only goroutines
	// running manager code count: timers left by earlier tests in this package (delayed
	// segment deletes) may fire at any moment and briefly add a goroutine of their own.
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if strings.Contains(stacks, "logstore.(*Manager)") {
		t.Fatalf("manager goroutines left after Shutdown (%d goroutines now, %d before):\n%s",
			runtime.NumGoroutine(), goroutines, stacks)
	}
}
