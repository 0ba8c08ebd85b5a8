package logstore

// crashfs.go — CrashFS, a file system for crash tests: OSFS (on a tmpfs when one is there,
// CrashTempDir) that remembers, for every file opened through it, how much was fsynced, and can
// "crash": close every file it opened and cut each file back to what a power cut would
// have left. The deterministic simulation (integration/sim) runs each simulated broker's
// log dir on one; power-cut tests use it the same way.
//
// What a crash keeps (CrashLoseUnsynced):
//   - A file's data up to its length when its last Sync began (or its length when CrashFS
//     first saw it: files that existed before, or survived an earlier crash, count as
//     synced).
//     Unsynced writes past that are lost; a Truncate is kept as done (a later Sync records
//     the new length). Writes inside the synced length are kept (CrashFS does not keep old
//     contents); the log store only appends to segments and rewrites whole files through a
//     temporary file and a rename.
//   - Offset and time indexes (*.index, *.timeindex) are kept as they are: they are written
//     through mmap, which CrashFS does not see; recovery rebuilds the indexes of every
//     segment past the recovery point and checks the others.
//   - A file created since its directory's last SyncDir disappears, as its directory entry
//     was never made durable. Renames and removals are durable at once (no undo: the log
//     store follows each rename it relies on with a SyncDir).
//
// CrashKeepAll keeps everything (a process crash, kill -9: the page cache survives); only
// the files are closed.

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// CrashMode says what a crash loses.
type CrashMode int

const (
	// CrashKeepAll is a process crash: everything written is kept.
	CrashKeepAll CrashMode = iota
	// CrashLoseUnsynced is a power cut: what was not fsynced is lost (see CrashFS).
	CrashLoseUnsynced
)

// CrashFS is safe for concurrent use. Use one CrashFS per simulated machine (log dir).
type CrashFS struct {
	OSFS
	mu    sync.Mutex
	files map[string]*crashFileState // by clean absolute path
	open  map[*crashFile]struct{}
}

type crashFileState struct {
	synced  int64 // length at the last Sync
	created bool  // created since its directory's last SyncDir
}

// NewCrashFS returns a CrashFS. Paths given to it must be absolute or relative to the
// working directory, as for OSFS.
func NewCrashFS() *CrashFS {
	return &CrashFS{files: map[string]*crashFileState{}, open: map[*crashFile]struct{}{}}
}

// CrashTempDir returns a new temporary directory for a CrashFS, on /dev/shm when it exists
// (a simulation writes a lot and fsyncs often; tmpfs makes both cheap), else os.TempDir.
// The caller removes it.
func CrashTempDir(pattern string) (string, error) {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", pattern); err == nil {
			return d, nil
		}
	}
	return os.MkdirTemp("", pattern)
}

func cleanAbs(name string) string {
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return filepath.Clean(name)
}

// stateLocked returns name's state, taking its current length as synced when first seen.
func (c *CrashFS) stateLocked(name string) *crashFileState {
	st, ok := c.files[name]
	if !ok {
		st = &crashFileState{}
		if fi, err := os.Stat(name); err == nil {
			st.synced = fi.Size()
		}
		c.files[name] = st
	}
	return st
}

// OpenFile opens through OSFS and tracks the file.
func (c *CrashFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	abs := cleanAbs(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, statErr := os.Stat(abs)
	existed := statErr == nil
	f, err := c.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	st := c.stateLocked(abs)
	if !existed {
		st.synced, st.created = 0, true
	}
	if existed && flag&os.O_TRUNC != 0 {
		st.synced = 0
	}
	cf := &crashFile{File: f, fs: c, path: abs}
	c.open[cf] = struct{}{}
	return cf, nil
}

// Rename renames and moves the tracked state with the file.
func (c *CrashFS) Rename(oldpath, newpath string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.OSFS.Rename(oldpath, newpath); err != nil {
		return err
	}
	o, n := cleanAbs(oldpath), cleanAbs(newpath)
	for p, st := range c.files {
		switch {
		case p == o:
			delete(c.files, p)
			st.created = false // a rename is durable at once (see the file comment)
			c.files[n] = st
		case strings.HasPrefix(p, o+string(filepath.Separator)): // a directory renamed
			delete(c.files, p)
			c.files[n+p[len(o):]] = st
		}
	}
	for f := range c.open {
		switch {
		case f.path == o:
			f.path = n
		case strings.HasPrefix(f.path, o+string(filepath.Separator)):
			f.path = n + f.path[len(o):]
		}
	}
	return nil
}

// Remove removes and forgets the file.
func (c *CrashFS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.OSFS.Remove(name); err != nil {
		return err
	}
	delete(c.files, cleanAbs(name))
	return nil
}

// RemoveAll removes and forgets everything under path.
func (c *CrashFS) RemoveAll(path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.OSFS.RemoveAll(path); err != nil {
		return err
	}
	abs := cleanAbs(path)
	for p := range c.files {
		if p == abs || strings.HasPrefix(p, abs+string(filepath.Separator)) {
			delete(c.files, p)
		}
	}
	return nil
}

// Truncate truncates by name; a cut below the synced length lowers it.
func (c *CrashFS) Truncate(name string, size int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.OSFS.Truncate(name, size); err != nil {
		return err
	}
	st := c.stateLocked(cleanAbs(name))
	st.synced = min(st.synced, size)
	return nil
}

// SyncDir makes the files created in path durable.
func (c *CrashFS) SyncDir(path string) error {
	if err := c.OSFS.SyncDir(path); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	abs := cleanAbs(path)
	for p, st := range c.files {
		if filepath.Dir(p) == abs {
			st.created = false
		}
	}
	return nil
}

// Crash closes every file opened through c and, with CrashLoseUnsynced, cuts each tracked
// file back to its synced length and removes the files created since their directory's
// last SyncDir. Afterwards every file on disk counts as synced. The owner of the files
// (a Manager) must not be used again: its files are closed under it.
func (c *CrashFS) Crash(mode CrashMode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	open := make([]*crashFile, 0, len(c.open))
	for f := range c.open {
		open = append(open, f)
	}
	slices.SortFunc(open, func(a, b *crashFile) int { return strings.Compare(a.path, b.path) })
	for _, f := range open {
		_ = f.File.Close()
	}
	clear(c.open)
	var firstErr error
	if mode == CrashLoseUnsynced {
		paths := make([]string, 0, len(c.files))
		for p := range c.files {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		for _, p := range paths {
			st := c.files[p]
			var err error
			switch {
			case st.created:
				err = os.Remove(p)
			case strings.HasSuffix(p, ".index") || strings.HasSuffix(p, ".timeindex"):
				// mmapped: kept (see the file comment)
			default:
				var fi os.FileInfo
				if fi, err = os.Stat(p); err == nil && fi.Size() > st.synced {
					err = os.Truncate(p, st.synced)
				}
			}
			if err != nil && !os.IsNotExist(err) && firstErr == nil {
				firstErr = err
			}
		}
	}
	clear(c.files)
	return firstErr
}

// OpenFiles is the number of files opened through c and not closed.
func (c *CrashFS) OpenFiles() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open)
}

// SyncedLength is how much of name a crash would keep (CrashLoseUnsynced), and whether
// CrashFS tracks it (untracked files are kept whole).
func (c *CrashFS) SyncedLength(name string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.files[cleanAbs(name)]
	if !ok {
		return 0, false
	}
	if st.created {
		return -1, true
	}
	return st.synced, true
}

type crashFile struct {
	File
	fs   *CrashFS
	path string // current path: Rename moves it
}

// Sync fsyncs and records the file's length as synced: its length when Sync was called,
// so that a write racing the fsync (group commit appends while another goroutine syncs)
// does not count as covered by it.
func (f *crashFile) Sync() error {
	fi, err := f.File.Stat()
	if err != nil {
		return err
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.fs.mu.Lock()
	if st, ok := f.fs.files[f.path]; ok {
		st.synced = fi.Size()
	}
	f.fs.mu.Unlock()
	return nil
}

// Truncate truncates; a cut below the synced length lowers it.
func (f *crashFile) Truncate(size int64) error {
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.fs.mu.Lock()
	if st, ok := f.fs.files[f.path]; ok {
		st.synced = min(st.synced, size)
	}
	f.fs.mu.Unlock()
	return nil
}

// Close closes and stops tracking the handle (the file's state stays).
func (f *crashFile) Close() error {
	f.fs.mu.Lock()
	_, open := f.fs.open[f]
	delete(f.fs.open, f)
	f.fs.mu.Unlock()
	if !open {
		return os.ErrClosed // closed by a crash, or twice
	}
	return f.File.Close()
}
