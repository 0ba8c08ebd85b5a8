package logstore

import (
	"errors"
	"io/fs"
	"os"
)

// writeFileNoSync writes path through a .tmp file and a rename, without fsync: a roll's
// producer snapshot is written this way under the log lock and synced by the roll's flush
// (Kafka's takeSnapshot(sync = false) + flushProducerStateSnapshot). A crash before that
// sync may leave a torn snapshot, which loading detects by its CRC and deletes.
func writeFileNoSync(fsys FS, path string, data []byte) error {
	return replaceFile(fsys, path, data, false)
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
