//go:build unix

package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirLock is a held <dir>/.lock (Kafka's FileLock). flock locks belong to the open file
// description, so a second Manager in this same process is refused as well as another
// process.
type dirLock struct {
	f    File
	path string
}

func lockDir(fsys FS, dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := unix.Flock(int(f.OS().Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("failed to acquire lock on file .lock in %s: a samsa or Kafka instance in another process or thread is using this directory: %w", dir, ErrLogDirLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &dirLock{f: f, path: path}, nil
}

func (l *dirLock) unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unix.Flock(int(l.f.OS().Fd()), unix.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
