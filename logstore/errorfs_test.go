package logstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// recordingFS wraps OSFS and records every mutating call, in order, with paths relative
// to root, so tests can pin the create/write/fsync/rename order (pebble's logging_fs idea).
type recordingFS struct {
	OSFS
	root string
	mu   sync.Mutex
	ops  []string
}

func (r *recordingFS) rel(p string) string {
	if rel, err := filepath.Rel(r.root, p); err == nil {
		return rel
	}
	return p
}

func (r *recordingFS) record(format string, args ...any) {
	r.mu.Lock()
	r.ops = append(r.ops, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recordingFS) Ops() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ops...)
}

func (r *recordingFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := r.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return f, nil
	}
	r.record("open %s", r.rel(name))
	return &recordingFile{File: f, fs: r}, nil
}

func (r *recordingFS) Rename(o, n string) error {
	r.record("rename %s %s", r.rel(o), r.rel(n))
	return r.OSFS.Rename(o, n)
}

func (r *recordingFS) Remove(name string) error {
	r.record("remove %s", r.rel(name))
	return r.OSFS.Remove(name)
}

func (r *recordingFS) SyncDir(p string) error {
	r.record("syncdir %s", r.rel(p))
	return r.OSFS.SyncDir(p)
}

type recordingFile struct {
	File
	fs *recordingFS
}

func (f *recordingFile) Write(p []byte) (int, error) {
	f.fs.record("write %s %d", f.fs.rel(f.Name()), len(p))
	return f.File.Write(p)
}

func (f *recordingFile) Sync() error {
	f.fs.record("sync %s", f.fs.rel(f.Name()))
	return f.File.Sync()
}

func (f *recordingFile) Close() error {
	f.fs.record("close %s", f.fs.rel(f.Name()))
	return f.File.Close()
}

var errInjected = errors.New("injected I/O error")

// errorFS wraps OSFS and fails writes, fsyncs (and optionally renames) of files whose path
// contains match once armed, like pebble's errorfs. Reads are untouched.
type errorFS struct {
	OSFS
	match     atomic.Value // string
	armed     atomic.Bool
	failSync  atomic.Bool
	failWrite atomic.Bool
}

func newErrorFS() *errorFS {
	e := &errorFS{}
	e.match.Store("")
	return e
}

// arm starts failing writes/syncs on paths containing match.
func (e *errorFS) arm(match string, write, sync bool) {
	e.match.Store(match)
	e.failWrite.Store(write)
	e.failSync.Store(sync)
	e.armed.Store(true)
}

func (e *errorFS) disarm() { e.armed.Store(false) }

func (e *errorFS) hit(name string) bool {
	return e.armed.Load() && strings.Contains(name, e.match.Load().(string))
}

func (e *errorFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 && e.hit(name) && e.failWrite.Load() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errInjected}
	}
	f, err := e.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &errorFile{File: f, fs: e}, nil
}

func (e *errorFS) SyncDir(p string) error {
	if e.hit(p) && e.failSync.Load() {
		return &fs.PathError{Op: "fsync", Path: p, Err: errInjected}
	}
	return e.OSFS.SyncDir(p)
}

type errorFile struct {
	File
	fs *errorFS
}

func (f *errorFile) Write(p []byte) (int, error) {
	if f.fs.hit(f.Name()) && f.fs.failWrite.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: errInjected}
	}
	return f.File.Write(p)
}

func (f *errorFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.hit(f.Name()) && f.fs.failWrite.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: errInjected}
	}
	return f.File.WriteAt(p, off)
}

func (f *errorFile) Sync() error {
	if f.fs.hit(f.Name()) && f.fs.failSync.Load() {
		return &fs.PathError{Op: "fsync", Path: f.Name(), Err: errInjected}
	}
	return f.File.Sync()
}
