package group

// Fuzz targets for the loader of __consumer_offsets where transactions meet it: control
// records (end-transaction markers) and arbitrary bytes after transactional offsets. Seeds
// live in testdata/fuzz/<target>; rewrite them with
//
//	SAMSA_WRITE_FUZZ_SEEDS=1 go test -run TestWriteGroupFuzzSeeds ./coordinator/group

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// fuzzLoadEnv is a one-partition env with a plain offset (g1 t-0: 5) and producer 100's
// pending transactional offsets (g1 t-0: 10, t-1: 20), quiet.
func fuzzLoadEnv(t *testing.T) *env {
	e := newEnv(t, func(c *Config) { c.NumPartitions = 1 })
	e.c.logger.Logger.SetLevel(logrus.PanicLevel)
	allNil(t, "plain", e.plainCommit("g1", map[TopicPartition]int64{{"t", 0}: 5}))
	allNil(t, "txn", e.txnCommit("g1", 100, "", nil, -1, map[TopicPartition]int64{{"t", 0}: 10, {"t", 1}: 20}))
	return e
}

// reloadQuiet is reload without requiring the load to succeed: a new coordinator over the
// same log, its loads finished.
func (e *env) reloadQuiet(t *testing.T) *Coordinator {
	c2 := New(Config{NumPartitions: e.c.NumPartitions(), Clock: e.clock, Logger: e.c.logger}, e.log)
	t.Cleanup(c2.Shutdown)
	e.log.mu.Lock()
	e.log.leaders[0]++
	ep := e.log.leaders[0]
	e.log.mu.Unlock()
	c2.OnElection(0, ep)
	c2.wg.Wait()
	return c2
}

// FuzzLoadOffsetsControlRecord: a control batch of producer 100 whose one record has any
// key and value. The load applies the producer's pending offsets exactly when the key is
// ControlRecordType COMMIT (at least 4 bytes, version >= 0, type 1) and drops them
// otherwise; nothing stays pending.
func FuzzLoadOffsetsControlRecord(f *testing.F) {
	for _, s := range groupMarkerSeeds() {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		e := fuzzLoadEnv(t)
		if len(key) == 0 {
			key = nil
		}
		if len(value) == 0 {
			value = nil
		}
		b, err := recordbatch.Build(recordbatch.Header{Attributes: recordbatch.AttrTransactional | recordbatch.AttrControl,
			ProducerID: 100, ProducerEpoch: 3, BaseSequence: -1, BaseTimestamp: 1, MaxTimestamp: 1},
			[]recordbatch.Record{{Key: key, Value: value}}, recordbatch.None)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.log.Append(context.Background(), 0, b, true, 0); err != nil {
			t.Fatal(err)
		}
		c2 := e.reloadQuiet(t)
		if !c2.Loaded(0) {
			t.Fatal("partition not loaded")
		}
		commit := len(key) >= 4 && int16(binary.BigEndian.Uint16(key)) >= 0 && int16(binary.BigEndian.Uint16(key[2:])) == 1
		want0, want1 := int64(5), int64(-1)
		if commit {
			want0, want1 = 10, 20
		}
		if o, err := fetchOne(t, c2, "g1", TopicPartition{"t", 0}, true); o != want0 || err != nil {
			t.Fatalf("key %x: t-0 %d %v, want %d", key, o, err, want0)
		}
		if o, err := fetchOne(t, c2, "g1", TopicPartition{"t", 1}, true); o != want1 || err != nil {
			t.Fatalf("key %x: t-1 %d %v, want %d", key, o, err, want1)
		}
	})
}

// FuzzLoadOffsetsRaw: arbitrary bytes after the transactional offsets in the same read
// (torn batches, forged control batches, corrupt records). The load ends (loaded, or
// failed and logged), never panics, and a loaded partition still takes commits.
func FuzzLoadOffsetsRaw(f *testing.F) {
	for _, s := range groupRawSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e := fuzzLoadEnv(t)
		e.log.mu.Lock()
		bs := e.log.batches[0]
		bs[len(bs)-1] = append(bs[len(bs)-1], data...)
		e.log.mu.Unlock()
		c2 := e.reloadQuiet(t)
		if !c2.Loaded(0) {
			return
		}
		for _, g := range []string{"g1", "other"} {
			if _, err := c2.FetchOffsets(g, []TopicPartition{{"t", 0}}, true); err != nil {
				t.Fatalf("fetch %s: %v", g, err)
			}
		}
	})
}

func groupMarkerSeeds() [][2][]byte {
	return [][2][]byte{
		{{0, 0, 0, 1}, {0, 0, 0, 0, 0, 5}}, // COMMIT
		{{0, 0, 0, 0}, {0, 0, 0, 0, 0, 5}}, // ABORT
		{{0, 0, 0, 2}, nil},                // LEADER_CHANGE
		{{0, 5, 0, 1, 1, 2}, nil},          // a newer key version: still COMMIT
		{{0xff, 0xff, 0, 1}, nil},          // negative version: malformed
		{{0, 0}, nil},                      // short key
		{nil, {0, 0, 0, 0, 0, 5}},          // null key
	}
}

// groupRawSeeds are byte strings to append after the transactional offsets' batch.
func groupRawSeeds(t testing.TB) [][]byte {
	ctrl := func(pid int64, key []byte, base int64) []byte {
		b, err := recordbatch.Build(recordbatch.Header{Attributes: recordbatch.AttrTransactional | recordbatch.AttrControl,
			ProducerID: pid, ProducerEpoch: 3, BaseSequence: -1, BaseTimestamp: 1, MaxTimestamp: 1},
			[]recordbatch.Record{{Key: key, Value: []byte{0, 0, 0, 0, 0, 1}}}, recordbatch.None)
		if err != nil {
			t.Fatal(err)
		}
		recordbatch.Batch(b).SetBaseOffset(base)
		return b
	}
	commit := ctrl(100, []byte{0, 0, 0, 1}, 3)
	abort := ctrl(100, []byte{0, 0, 0, 0}, 3)
	empty, err := recordbatch.Build(recordbatch.Header{Attributes: recordbatch.AttrTransactional | recordbatch.AttrControl,
		ProducerID: 100, ProducerEpoch: 3, BaseSequence: -1, LastOffsetDelta: -1}, nil, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	badRecords := append([]byte(nil), commit...)
	binary.BigEndian.PutUint32(badRecords[57:], 3) // more records than the batch holds
	return [][]byte{
		{},
		commit,
		abort,
		empty,
		badRecords,
		commit[:len(commit)-3], // torn
		append(append([]byte(nil), abort...), commit...),
		ctrl(100, []byte{0, 0}, 3),
		ctrl(100, nil, 3),
	}
}

// TestWriteGroupFuzzSeeds writes the committed corpora; it does nothing unless asked.
func TestWriteGroupFuzzSeeds(t *testing.T) {
	if os.Getenv("SAMSA_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set SAMSA_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz")
	}
	write := func(target, name string, args ...[]byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		sb.WriteString("go test fuzz v1\n")
		for _, a := range args {
			fmt.Fprintf(&sb, "[]byte(%q)\n", a)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range groupMarkerSeeds() {
		write("FuzzLoadOffsetsControlRecord", fmt.Sprintf("seed-%02d", i), s[0], s[1])
	}
	for i, s := range groupRawSeeds(t) {
		write("FuzzLoadOffsetsRaw", fmt.Sprintf("seed-%02d", i), s)
	}
}
