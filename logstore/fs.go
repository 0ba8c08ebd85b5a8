package logstore

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// FS is the filesystem seam of the log store. Production uses OSFS; tests wrap it to record
// the order of create/write/fsync/rename or to inject failed writes, fsyncs and full disks.
// Whatever the wrapper does, File.OS must return the real *os.File so reads can still be
// served with pread and sendfile at an explicit offset (zero-copy fetch).
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	RemoveAll(path string) error
	MkdirAll(path string, perm fs.FileMode) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	Truncate(name string, size int64) error
	// SyncDir fsyncs a directory so a rename or create in it is durable.
	SyncDir(path string) error
}

// File is an open file of the log store. Writes and syncs go through the interface (so a
// test can fail them); reads may use OS() directly.
type File interface {
	Name() string
	Write(p []byte) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	ReadAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
	Sync() error
	Stat() (fs.FileInfo, error)
	Close() error
	// OS is the underlying file, for pread/sendfile/mmap.
	OS() *os.File
}

// OSFS is the real filesystem.
type OSFS struct{}

type osFile struct{ *os.File }

func (f osFile) OS() *os.File { return f.File }

func (OSFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	// open(2) + os.NewFile: a regular file needs no poller registration, which os.OpenFile
	// attempts (several extra syscalls per file; it adds up over 10,000 partitions at start).
	fd, err := unix.Open(name, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return osFile{os.NewFile(uintptr(fd), name)}, nil
}
func (OSFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (OSFS) Remove(name string) error                     { return os.Remove(name) }
func (OSFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (OSFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (OSFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }
func (OSFS) Truncate(name string, size int64) error       { return os.Truncate(name, size) }
func (OSFS) SyncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
