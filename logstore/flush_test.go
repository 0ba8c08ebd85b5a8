package logstore

import (
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// stallFS wraps OSFS: once armed, an fsync of a file whose path contains match signals
// entered and waits for release, like a slow disk. Other fsyncs pass and are recorded.
type stallFS struct {
	OSFS
	mu      sync.Mutex
	match   string
	entered chan string
	release chan struct{}
	synced  []string
}

func newStallFS() *stallFS { return &stallFS{entered: make(chan string, 1)} }

// arm makes the next fsyncs of paths containing match stall until the returned func runs.
func (s *stallFS) arm(match string) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.match, s.release = match, make(chan struct{})
	ch := s.release
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.match = ""
			s.mu.Unlock()
			close(ch)
		})
	}
}

func (s *stallFS) sync(name string) {
	s.mu.Lock()
	stall := s.match != "" && strings.Contains(name, s.match)
	rel := s.release
	s.synced = append(s.synced, filepath.Base(name))
	s.mu.Unlock()
	if stall {
		s.entered <- name
		<-rel
	}
}

func (s *stallFS) syncedNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.synced...)
}

func (s *stallFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := s.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &stallFile{File: f, fs: s}, nil
}

func (s *stallFS) SyncDir(p string) error {
	s.sync(p)
	return s.OSFS.SyncDir(p)
}

type stallFile struct {
	File
	fs *stallFS
}

func (f *stallFile) Sync() error {
	f.fs.sync(f.Name())
	return f.File.Sync()
}

// appendAsync runs AppendAsLeader in a goroutine; the channel gets its error.
func appendAsync(l *Log, batch []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := l.AppendAsLeader(batch, 0)
		done <- err
	}()
	return done
}

// stuckAfter is how long a test waits before declaring an append stuck behind an fsync
// that it is holding; it only bounds a hang, the order is what is asserted.
const stuckAfter = 10 * time.Second

// An append goes through while Flush is inside an fsync, and the recovery point moves only
// once that fsync returned, and only to the end the flush started from.
func TestAppendNotBlockedByFlush(t *testing.T) {
	sfs := newStallFS()
	clock := newStepClock(time.Now().UnixMilli())
	l := openTestLog(t, filepath.Join(t.TempDir(), "f-0"), testLogOpts{clock: clock, fs: sfs})
	defer l.Close()
	batch := func() []byte { return makeBatch(t, 2, 100, clock.Now().UnixMilli(), recordbatch.None, false) }
	if _, err := l.AppendAsLeader(batch(), 0); err != nil {
		t.Fatal(err)
	}
	flushedEnd := l.LogEndOffset()

	release := sfs.arm(".log")
	defer release()
	flushDone := make(chan error, 1)
	go func() { flushDone <- l.Flush() }()
	<-sfs.entered // Flush is inside the segment's fsync

	appended := appendAsync(l, batch())
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-flushDone:
		t.Fatalf("flush finished (%v) while its fsync was held", err)
	case <-time.After(stuckAfter):
		t.Fatal("append is blocked behind the flush's fsync")
	}
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d before the fsync returned, want 0", rp)
	}

	release()
	if err := <-flushDone; err != nil {
		t.Fatal(err)
	}
	if rp, leo := l.RecoveryPoint(), l.LogEndOffset(); rp != flushedEnd || leo <= rp {
		t.Fatalf("recovery point %d (LEO %d), want %d: the end when the flush started", rp, leo, flushedEnd)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if rp := l.RecoveryPoint(); rp != l.LogEndOffset() {
		t.Fatalf("recovery point %d after a second flush, want LEO %d", rp, l.LogEndOffset())
	}
}

// A roll does not wait for the old segment's fsync: the append that rolls and the ones
// after it return while the roll's flush is held; the recovery point reaches the new
// segment's base only after the old segment and the roll's producer snapshot are synced.
func TestRollFlushesInBackground(t *testing.T) {
	sfs := newStallFS()
	clock := newStepClock(time.Now().UnixMilli())
	dir := filepath.Join(t.TempDir(), "f-1")
	l := openTestLog(t, dir, testLogOpts{clock: clock, fs: sfs, cfg: map[string]string{"segment.bytes": "1000"}})
	defer l.Close()
	batch := func() []byte { return makeBatch(t, 1, 600, clock.Now().UnixMilli(), recordbatch.None, false) }
	if _, err := l.AppendAsLeader(batch(), 0); err != nil {
		t.Fatal(err)
	}
	newBase := l.LogEndOffset()

	release := sfs.arm(filepath.Base(LogFileName(dir, 0)))
	defer release()
	for i := 0; i < 2; i++ { // each rolls: one 600-byte batch per 1000-byte segment
		select {
		case err := <-appendAsync(l, batch()):
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(stuckAfter):
			t.Fatalf("append %d is blocked behind the roll's fsync", i)
		}
	}
	<-sfs.entered // the roll flusher is inside the old segment's fsync
	if n := len(l.Segments()); n != 3 {
		t.Fatalf("%d segments, want 3", n)
	}
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d while the old segment's fsync is held, want 0", rp)
	}

	release()
	// Flush waits for the roll's flush (flushes are serialized), then syncs the rest.
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if rp := l.RecoveryPoint(); rp != l.LogEndOffset() {
		t.Fatalf("recovery point %d, want LEO %d", rp, l.LogEndOffset())
	}
	snap := filepath.Base(ProducerSnapshotFileName(dir, newBase))
	synced := strings.Join(sfs.syncedNames(), " ")
	if !strings.Contains(synced, snap) {
		t.Fatalf("producer snapshot %s never fsynced; synced: %s", snap, synced)
	}
}

// With flush.messages=1 each append fsyncs its own segment. After a roll whose flush of the
// old segment is still running, that fsync must not move the recovery point past the old
// segment: its data is not durable yet.
func TestFlushMessagesDoesNotSkipPendingRollFlush(t *testing.T) {
	sfs := newStallFS()
	clock := newStepClock(time.Now().UnixMilli())
	dir := filepath.Join(t.TempDir(), "f-2")
	l := openTestLog(t, dir, testLogOpts{clock: clock, fs: sfs, cfg: map[string]string{"segment.bytes": "1000"}})
	defer l.Close()
	batch := func() []byte { return makeBatch(t, 1, 600, clock.Now().UnixMilli(), recordbatch.None, false) }
	if _, err := l.AppendAsLeader(batch(), 0); err != nil { // not flushed
		t.Fatal(err)
	}
	cfg, err := NewLogConfig(nil, map[string]string{"segment.bytes": "1000", "flush.messages": "1"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetConfig(cfg)
	release := sfs.arm(filepath.Base(LogFileName(dir, 0)))
	defer release()
	if _, err := l.AppendAsLeader(batch(), 0); err != nil { // rolls, then fsyncs the new segment
		t.Fatal(err)
	}
	<-sfs.entered // the roll flusher is inside the old segment's fsync
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d while the old segment's flush is held, want 0", rp)
	}
	release()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if rp := l.RecoveryPoint(); rp != l.LogEndOffset() {
		t.Fatalf("recovery point %d, want LEO %d", rp, l.LogEndOffset())
	}
}

// Close waits for a roll's background flush, and the log reopens with everything.
func TestCloseWaitsForRollFlush(t *testing.T) {
	sfs := newStallFS()
	clock := newStepClock(time.Now().UnixMilli())
	dir := filepath.Join(t.TempDir(), "f-3")
	l := openTestLog(t, dir, testLogOpts{clock: clock, fs: sfs, cfg: map[string]string{"segment.bytes": "1000"}})
	batch := func() []byte { return makeBatch(t, 1, 600, clock.Now().UnixMilli(), recordbatch.None, false) }
	release := sfs.arm(filepath.Base(LogFileName(dir, 0)))
	defer release()
	for i := 0; i < 3; i++ {
		if _, err := l.AppendAsLeader(batch(), 0); err != nil {
			t.Fatal(err)
		}
	}
	<-sfs.entered
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	// Close waited for the roll flusher: its goroutine is gone.
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "(*Log).rollFlusher") {
		t.Fatalf("roll flusher still running after Close:\n%s", stacks)
	}
	l = openTestLog(t, dir, testLogOpts{clock: clock, clean: true})
	defer l.Close()
	if got := len(readAllBatches(t, l, 0)); got != 3 {
		t.Fatalf("%d batches after reopen, want 3", got)
	}
}
