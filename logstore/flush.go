package logstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// writeFileNoSync writes path through a .tmp file and a rename, without fsync: a roll's
// producer snapshot is written this way under the log lock and synced by the roll's flush
// (Kafka's takeSnapshot(sync = false) + flushProducerStateSnapshot). A crash before that
// sync may leave a torn snapshot, which loading detects by its CRC and deletes.
func writeFileNoSync(fsys FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// syncFileIfExists fsyncs path; a file deleted meanwhile (truncation, retention) is no
// error (Kafka's Utils.flushFileIfExists).
func syncFileIfExists(fsys FS, path string) error {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
