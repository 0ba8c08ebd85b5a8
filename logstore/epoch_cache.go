package logstore

// LeaderEpochFileCache mirrors Kafka's LeaderEpochFileCache: epoch -> first offset written
// in that epoch, persisted to <partition dir>/leader-epoch-checkpoint on every change.
//
// Concurrency: guarded by its own mutex; writes happen under the log's append lock, reads
// (LatestEpoch, EndOffsetForEpoch) from any goroutine.

import (
	"fmt"
	"path/filepath"
	"sort"
	"sync"
)

// UndefinedEpoch and UndefinedEpochOffset are Kafka's UNDEFINED_EPOCH(_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// LeaderEpochFileCache holds the epoch entries of one partition, in increasing epoch order.
type LeaderEpochFileCache struct {
	fs   FS
	path string
	mu   sync.RWMutex
	// entries is sorted by epoch, with start offsets strictly increasing.
	entries []EpochEntry
}

func openLeaderEpochCache(fsys FS, dir string) (*LeaderEpochFileCache, error) {
	c := &LeaderEpochFileCache{fs: fsys, path: filepath.Join(dir, LeaderEpochCheckpointFile)}
	entries, err := ReadLeaderEpochCheckpoint(fsys, c.path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", c.path, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Epoch < entries[j].Epoch })
	c.entries = entries
	return c, nil
}

func (c *LeaderEpochFileCache) flushLocked() error {
	if err := WriteLeaderEpochCheckpoint(c.fs, c.path, c.entries); err != nil {
		return fmt.Errorf("%w: write %s: %v", ErrKafkaStorage, c.path, err)
	}
	return nil
}

// Entries returns a copy of the entries.
func (c *LeaderEpochFileCache) Entries() []EpochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]EpochEntry(nil), c.entries...)
}

// Assign records that epoch starts at startOffset if that is news (a new epoch, or an
// earlier start for the latest one), dropping entries it contradicts. It reports whether the
// cache changed.
func (c *LeaderEpochFileCache) Assign(epoch int32, startOffset int64) (bool, error) {
	changed := c.assign(epoch, startOffset)
	if !changed {
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return true, c.flushLocked()
}

// Flush writes the checkpoint (after assignments made during recovery).
func (c *LeaderEpochFileCache) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

// assign updates the entries without writing the checkpoint.
func (c *LeaderEpochFileCache) assign(epoch int32, startOffset int64) bool {
	if epoch < 0 || startOffset < 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if epoch == last.Epoch && startOffset >= last.StartOffset {
			return false
		}
	}
	// maybeTruncateNonMonotonicEntries: drop entries with epoch >= new or start >= new start.
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.Epoch < epoch && e.StartOffset < startOffset {
			kept = append(kept, e)
		}
	}
	c.entries = append(kept, EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return true
}

// LatestEpoch is the newest epoch, if any.
func (c *LeaderEpochFileCache) LatestEpoch() (int32, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.entries) == 0 {
		return UndefinedEpoch, false
	}
	return c.entries[len(c.entries)-1].Epoch, true
}

// EpochForOffset is the epoch whose range holds offset, or -1.
func (c *LeaderEpochFileCache) EpochForOffset(offset int64) int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ep := UndefinedEpoch
	for _, e := range c.entries {
		if e.StartOffset > offset {
			break
		}
		ep = e.Epoch
	}
	return ep
}

// EndOffsetFor is Kafka's endOffsetFor: the largest epoch <= requested and the start offset
// of the first epoch after it (the LEO for the latest epoch).
func (c *LeaderEpochFileCache) EndOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if requested == UndefinedEpoch || len(c.entries) == 0 {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if c.entries[len(c.entries)-1].Epoch == requested {
		return requested, logEndOffset
	}
	// higher: first entry with epoch > requested.
	hi := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > requested })
	if hi == len(c.entries) {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if hi == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}

// TruncateFromEnd drops entries starting at or after endOffset.
func (c *LeaderEpochFileCache) TruncateFromEnd(endOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	if endOffset < 0 || n == 0 || c.entries[n-1].StartOffset < endOffset {
		return nil
	}
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.StartOffset < endOffset {
			kept = append(kept, e)
		}
	}
	c.entries = kept
	return c.flushLocked()
}

// TruncateFromStart drops entries before startOffset, moving the last of them up to start
// at startOffset.
func (c *LeaderEpochFileCache) TruncateFromStart(startOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset <= startOffset {
		i++
	}
	if i == 0 {
		return nil
	}
	last := c.entries[i-1]
	if i == 1 && last.StartOffset == startOffset {
		return nil
	}
	rest := append([]EpochEntry{{Epoch: last.Epoch, StartOffset: startOffset}}, c.entries[i:]...)
	c.entries = rest
	return c.flushLocked()
}

// Clear drops every entry.
func (c *LeaderEpochFileCache) Clear() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = nil
	return c.flushLocked()
}
