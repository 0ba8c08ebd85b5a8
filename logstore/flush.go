package logstore

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// flushObservers receive the duration of every segment flush in the process: Kafka's
// LogSegment.LOG_FLUSH_TIMER (LogFlushStats LogFlushRateAndTimeMs) is one static timer per
// JVM, so brokers sharing a process see each other's flushes, as in Kafka.
var flushObservers struct {
	sync.RWMutex
	n   atomic.Int32 // len(fns): no clock read when nobody observes
	fns map[*func(time.Duration)]struct{}
}

// ObserveSegmentFlushes calls fn (from the flushing goroutine; it must be cheap) with the
// duration of each segment flush until stop is called.
func ObserveSegmentFlushes(fn func(time.Duration)) (stop func()) {
	key := &fn
	flushObservers.Lock()
	if flushObservers.fns == nil {
		flushObservers.fns = map[*func(time.Duration)]struct{}{}
	}
	flushObservers.fns[key] = struct{}{}
	flushObservers.n.Store(int32(len(flushObservers.fns)))
	flushObservers.Unlock()
	return func() {
		flushObservers.Lock()
		delete(flushObservers.fns, key)
		flushObservers.n.Store(int32(len(flushObservers.fns)))
		flushObservers.Unlock()
	}
}

// timeFlush runs a segment flush and reports its duration to the observers.
func timeFlush(flush func() error) error {
	if flushObservers.n.Load() == 0 {
		return flush()
	}
	start := time.Now()
	err := flush()
	d := time.Since(start)
	flushObservers.RLock()
	for fn := range flushObservers.fns {
		(*fn)(d)
	}
	flushObservers.RUnlock()
	return err
}

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
