package logstore

// Checkpoint files, mirroring Kafka's CheckpointFile, OffsetCheckpointFile,
// LeaderEpochCheckpointFile and PartitionMetadataFile (storage/.../checkpoint).
//
// Offset checkpoint (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
// replication-offset-checkpoint, cleaner-offset-checkpoint):
//
//	0                  <- version
//	2                  <- entry count
//	orders 0 1234      <- topic partition offset
//	orders 1 98
//
// leader-epoch-checkpoint: the same header, then "<epoch> <startOffset>" lines.
// partition.metadata: "version: 0\ntopic_id: <base64url uuid>" with no trailing newline.
//
// Every file is written as <name>.tmp, fsynced, renamed over <name>, and the parent
// directory fsynced (Kafka's Utils.atomicMoveWithFallback with needFlushParentDir).

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Checkpoint file names at the root of a log dir and inside a partition dir.
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	HighWatermarkCheckpointFile  = "replication-offset-checkpoint"
	CleanerCheckpointFile        = "cleaner-offset-checkpoint"
	LeaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	PartitionMetadataFile        = "partition.metadata"
)

const checkpointVersion = 0

// WriteFileAtomic writes data to path through fsys the way Kafka replaces its checkpoint
// and properties files: create path+".tmp", write, fsync, close, rename over path, fsync
// the parent directory. A crash at any point leaves either the old or the new file.
func WriteFileAtomic(fsys FS, path string, data []byte) error {
	if err := replaceFile(fsys, path, data, true); err != nil {
		return err
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("fsync dir of %s: %w", path, err)
	}
	return nil
}

// replaceFile writes data to path+".tmp", fsyncs it if sync, and renames it over path.
func replaceFile(fsys FS, path string, data []byte, sync bool) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("fsync %s: %w", tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// readFileFS reads a whole file through fsys. A missing file returns fs.ErrNotExist.
func readFileFS(fsys FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// EncodeOffsetCheckpoint returns the bytes of an offset checkpoint file. Entries are
// sorted by topic then partition so the file is deterministic (Kafka writes map order).
func EncodeOffsetCheckpoint(offsets map[TopicPartition]int64) []byte {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var b bytes.Buffer
	b.Grow(16 + len(tps)*32)
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(tps))
	for _, tp := range tps {
		b.WriteString(tp.Topic)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(int64(tp.Partition), 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(offsets[tp], 10))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// WriteOffsetCheckpoint atomically writes an offset checkpoint file.
func WriteOffsetCheckpoint(fsys FS, path string, offsets map[TopicPartition]int64) error {
	if err := WriteFileAtomic(fsys, path, EncodeOffsetCheckpoint(offsets)); err != nil {
		return fmt.Errorf("write offset checkpoint: %w", err)
	}
	return nil
}

// ReadOffsetCheckpoint reads an offset checkpoint file. A missing or empty file is an
// empty map (Kafka creates the file empty at start). A wrong version, a malformed line or
// a count mismatch is an error naming the file, as in Kafka's CheckpointReadBuffer.
func ReadOffsetCheckpoint(fsys FS, path string) (map[TopicPartition]int64, error) {
	out := make(map[TopicPartition]int64)
	err := readCheckpoint(fsys, path, func(fields []string) bool {
		if len(fields) != 3 {
			return false
		}
		p, err1 := strconv.ParseInt(fields[1], 10, 32)
		off, err2 := strconv.ParseInt(fields[2], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		out[TopicPartition{Topic: fields[0], Partition: int32(p)}] = off
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EpochEntry is one line of leader-epoch-checkpoint: the first offset written in an epoch.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// EncodeLeaderEpochCheckpoint returns the bytes of a leader-epoch-checkpoint file, entries
// in the given (increasing epoch) order.
func EncodeLeaderEpochCheckpoint(entries []EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

// WriteLeaderEpochCheckpoint atomically writes a partition's leader-epoch-checkpoint.
func WriteLeaderEpochCheckpoint(fsys FS, path string, entries []EpochEntry) error {
	if err := WriteFileAtomic(fsys, path, EncodeLeaderEpochCheckpoint(entries)); err != nil {
		return fmt.Errorf("write leader epoch checkpoint: %w", err)
	}
	return nil
}

// ReadLeaderEpochCheckpoint reads a leader-epoch-checkpoint; missing or empty is nil.
func ReadLeaderEpochCheckpoint(fsys FS, path string) ([]EpochEntry, error) {
	var out []EpochEntry
	err := readCheckpoint(fsys, path, func(fields []string) bool {
		if len(fields) != 2 {
			return false
		}
		e, err1 := strconv.ParseInt(fields[0], 10, 32)
		off, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		out = append(out, EpochEntry{Epoch: int32(e), StartOffset: off})
		return true
	})
	return out, err
}

// readCheckpoint parses the shared version/count/lines layout, calling entry per line
// with its whitespace-separated fields.
func readCheckpoint(fsys FS, path string, entry func(fields []string) bool) error {
	data, err := readFileFS(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	if !sc.Scan() {
		return sc.Err() // empty file: no entries
	}
	version, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil {
		return fmt.Errorf("checkpoint %s: malformed version line %q", path, sc.Text())
	}
	if version != checkpointVersion {
		return fmt.Errorf("checkpoint %s: unrecognised version %d", path, version)
	}
	if !sc.Scan() {
		return sc.Err()
	}
	want, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || want < 0 {
		return fmt.Errorf("checkpoint %s: malformed count line %q", path, sc.Text())
	}
	n := 0
	for sc.Scan() {
		if !entry(strings.Fields(sc.Text())) {
			return fmt.Errorf("checkpoint %s: malformed line %q", path, sc.Text())
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	if n != want {
		return fmt.Errorf("checkpoint %s: expected %d entries, found %d", path, want, n)
	}
	return nil
}

// TopicIDString renders a topic id as Kafka's Uuid.toString does: URL-safe base64
// without padding (22 characters).
func TopicIDString(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// ParseTopicID parses Kafka's Uuid string form.
func ParseTopicID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("invalid topic id %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// EncodePartitionMetadata returns partition.metadata's bytes (no trailing newline).
func EncodePartitionMetadata(topicID [16]byte) []byte {
	return []byte("version: 0\ntopic_id: " + TopicIDString(topicID))
}

// WritePartitionMetadata atomically writes <partitionDir>/partition.metadata.
func WritePartitionMetadata(fsys FS, partitionDir string, topicID [16]byte) error {
	path := filepath.Join(partitionDir, PartitionMetadataFile)
	if err := WriteFileAtomic(fsys, path, EncodePartitionMetadata(topicID)); err != nil {
		return fmt.Errorf("write partition metadata: %w", err)
	}
	return nil
}

// ReadPartitionMetadata reads <partitionDir>/partition.metadata. found is false when the
// file does not exist. A zero topic id is rejected, as in Kafka.
func ReadPartitionMetadata(fsys FS, partitionDir string) (topicID [16]byte, found bool, err error) {
	path := filepath.Join(partitionDir, PartitionMetadataFile)
	data, err := readFileFS(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return topicID, false, nil
	}
	if err != nil {
		return topicID, false, fmt.Errorf("read %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 {
		return topicID, false, fmt.Errorf("%s: malformed partition metadata", path)
	}
	v, ok := propLine(lines[0], "version")
	if !ok || v != "0" {
		return topicID, false, fmt.Errorf("%s: unrecognised version line %q", path, lines[0])
	}
	idStr, ok := propLine(lines[1], "topic_id")
	if !ok {
		return topicID, false, fmt.Errorf("%s: malformed line %q", path, lines[1])
	}
	topicID, err = ParseTopicID(idStr)
	if err != nil {
		return topicID, false, fmt.Errorf("%s: %w", path, err)
	}
	if topicID == ([16]byte{}) {
		return topicID, false, fmt.Errorf("%s: invalid zero topic id", path)
	}
	return topicID, true, nil
}

// propLine splits "key: value" (Kafka splits on ":\s+").
func propLine(line, key string) (string, bool) {
	k, v, ok := strings.Cut(line, ":")
	if !ok || strings.TrimSpace(k) != key {
		return "", false
	}
	return strings.TrimSpace(v), true
}
