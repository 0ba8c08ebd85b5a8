package logstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func crashDir(t *testing.T) string {
	t.Helper()
	d, err := CrashTempDir("crashfs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCrashFSKeepsSyncedData(t *testing.T) {
	for _, tc := range []struct {
		mode CrashMode
		want int64
	}{{CrashLoseUnsynced, 5}, {CrashKeepAll, 8}} {
		dir := crashDir(t)
		c := NewCrashFS()
		p := filepath.Join(dir, "a.log")
		f, err := c.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("hello"))
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("abc"))
		if n, ok := c.SyncedLength(p); !ok || n != 5 {
			t.Fatalf("synced length %d %v", n, ok)
		}
		if err := c.Crash(tc.mode); err != nil {
			t.Fatal(err)
		}
		if got := fileSize(t, p); got != tc.want {
			t.Errorf("mode %d: size after crash %d, want %d", tc.mode, got, tc.want)
		}
		if c.OpenFiles() != 0 {
			t.Errorf("files still open after the crash")
		}
		if err := f.Close(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("closing a file closed by the crash: %v", err)
		}
		// After a crash everything on disk counts as synced.
		if err := c.Crash(CrashLoseUnsynced); err != nil || fileSize(t, p) != tc.want {
			t.Errorf("second crash changed the file: %v", err)
		}
	}
}

func TestCrashFSCreateNeedsDirSync(t *testing.T) {
	dir := crashDir(t)
	c := NewCrashFS()
	kept, lost := filepath.Join(dir, "kept"), filepath.Join(dir, "lost")
	f, _ := c.OpenFile(kept, os.O_CREATE|os.O_WRONLY, 0o644)
	f.Write([]byte("x"))
	f.Sync()
	f.Close()
	if err := c.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	g, _ := c.OpenFile(lost, os.O_CREATE|os.O_WRONLY, 0o644)
	g.Write([]byte("y"))
	g.Sync() // data synced, directory entry not
	if err := c.Crash(CrashLoseUnsynced); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lost); !os.IsNotExist(err) {
		t.Errorf("file created without a directory fsync survived: %v", err)
	}
	if fileSize(t, kept) != 1 {
		t.Errorf("synced file lost")
	}
}

func TestCrashFSRenameAndTruncate(t *testing.T) {
	dir := crashDir(t)
	c := NewCrashFS()
	tmp, final := filepath.Join(dir, "cp.tmp"), filepath.Join(dir, "cp")
	f, _ := c.OpenFile(tmp, os.O_CREATE|os.O_WRONLY, 0o644)
	f.Write([]byte("0123456789"))
	f.Sync()
	if err := c.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("more")) // through the handle opened under the old name
	if n, _ := c.SyncedLength(final); n != 10 {
		t.Fatalf("synced length after rename %d", n)
	}
	if err := f.Truncate(4); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("zz")) // unsynced, past the cut
	if err := c.Crash(CrashLoseUnsynced); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, final); got != 4 {
		t.Errorf("size after crash %d, want 4", got)
	}
}

// TestCrashFSLogRecovery: a log on a CrashFS loses exactly its unflushed tail in a power
// cut and recovers to the flushed end.
func TestCrashFSLogRecovery(t *testing.T) {
	dir := filepath.Join(crashDir(t), "t-0")
	c := NewCrashFS()
	if err := c.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l := openTestLog(t, dir, testLogOpts{fs: c})
	for range 3 {
		if _, err := l.AppendAsLeader(makeBatch(t, 2, 10, 1, 0, false), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(makeBatch(t, 2, 10, 1, 0, false), 0); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 8 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	if err := c.Crash(CrashLoseUnsynced); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, dir, testLogOpts{fs: c})
	defer l2.Close()
	if l2.LogEndOffset() != 6 {
		t.Fatalf("LEO after power cut %d, want 6", l2.LogEndOffset())
	}
	if got := len(readAllBatches(t, l2, 0)); got != 3 {
		t.Fatalf("%d batches after recovery, want 3", got)
	}
}

// TestCrashFSLogRecoveryAfterRolls: segment rolls leave producer snapshots written without
// fsync; a power cut empties them and recovery still opens the log at its flushed end.
func TestCrashFSLogRecoveryAfterRolls(t *testing.T) {
	dir := filepath.Join(crashDir(t), "t-0")
	c := NewCrashFS()
	if err := c.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := testLogOpts{fs: c, cfg: map[string]string{"segment.bytes": "300"}}
	l := openTestLog(t, dir, opts)
	for range 10 {
		if _, err := l.AppendAsLeader(makeBatch(t, 2, 40, 1, 0, false), 0); err != nil {
			t.Fatal(err)
		}
	}
	flushed := l.LogEndOffset()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.AppendAsLeader(makeBatch(t, 2, 40, 1, 0, false), 0); err != nil {
			t.Fatal(err)
		}
	}
	before := l.LogEndOffset()
	l.flushWG.Wait() // the rolls' background flushes are done: they make more durable
	if err := c.Crash(CrashLoseUnsynced); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, dir, opts)
	defer l2.Close()
	if leo := l2.LogEndOffset(); leo < flushed || leo >= before {
		t.Fatalf("LEO after power cut %d, want in [%d, %d)", leo, flushed, before)
	}
	readAllBatches(t, l2, 0)
}
