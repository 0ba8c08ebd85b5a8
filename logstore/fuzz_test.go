package logstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// FuzzAppendAsLeader: arbitrary produce payloads either fail with a typed error and leave the
// log unchanged, or append batches that read back valid. The first byte is a switch: bit 0
// recomputes CRCs so mutations reach the record-level checks.
func FuzzAppendAsLeader(f *testing.F) {
	for _, c := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd} {
		f.Add(append([]byte{1}, makeBatch(f, 3, 10, 1_700_000_000_000, c, true)...))
	}
	f.Add(append([]byte{0}, makeBatch(f, 1, 0, -1, recordbatch.None, false)...))
	dir := filepath.Join(f.TempDir(), "fuzz-0")
	clock := newStepClock(1_700_000_000_000)
	cfg, _ := NewLogConfig(nil, map[string]string{
		"segment.bytes": "65536", "message.timestamp.before.max.ms": "86400000", "message.timestamp.after.max.ms": "3600000"})
	// No test logger: the fuzz target must not log through f.
	l, err := OpenLog(dir, LogOpenOptions{Config: cfg, Clock: clock.Now, FS: noSyncFS{}})
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	typed := []error{ErrCorruptMessage, ErrMessageTooLarge, ErrInvalidRecord, ErrInvalidTimestamp, ErrUnsupportedForMagic, ErrRecordListTooLarge}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		fix := data[0]&1 == 1
		payload := append([]byte(nil), data[1:]...)
		if fix {
			for rest := payload; len(rest) >= recordbatch.HeaderSize; {
				size, err := recordbatch.PeekSize(rest)
				if err != nil || size > len(rest) {
					break
				}
				recordbatch.Batch(rest[:size]).SetCRC()
				rest = rest[size:]
			}
		}
		leo, size := l.LogEndOffset(), l.Size()
		info, err := l.AppendAsLeader(payload, 1)
		if err != nil {
			ok := false
			for _, e := range typed {
				ok = ok || errors.Is(err, e)
			}
			if !ok {
				t.Fatalf("untyped error: %v", err)
			}
			if l.LogEndOffset() != leo || l.Size() != size {
				t.Fatal("failed append changed the log")
			}
			return
		}
		if info.FirstOffset != leo || l.LogEndOffset() != info.LastOffset+1 {
			t.Fatalf("offsets: %+v, LEO before %d after %d", info, leo, l.LogEndOffset())
		}
		ri, err := l.Read(info.FirstOffset, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ri.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		for len(got) > 0 {
			b, rest, err := recordbatch.Next(got)
			if err != nil {
				break
			}
			if err := recordbatch.Validate(b); err != nil {
				t.Fatalf("stored batch invalid: %v", err)
			}
			if err := b.ForEachRecord(false, nil); err != nil {
				t.Fatalf("stored batch records invalid: %v", err)
			}
			got = rest
		}
	})
}

// segmentSeed is a valid single-segment log file of a few batches.
func segmentSeed(t testing.TB) []byte {
	var out []byte
	off := int64(0)
	for i, c := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.None, recordbatch.LZ4} {
		b := recordbatch.Batch(makeBatch(t, 2+i, 15, 1_700_000_000_000+int64(i), c, true))
		b.SetBaseOffset(off)
		b.SetPartitionLeaderEpoch(int32(i))
		off = b.NextOffset()
		out = append(out, b...)
	}
	return out
}

// FuzzRecoverSegment: whatever the bytes of the only segment, an unclean open truncates
// it to a prefix of valid batches with increasing offsets, and the log works afterwards.
func FuzzRecoverSegment(f *testing.F) {
	seed := segmentSeed(f)
	f.Add(seed)
	f.Add(seed[:len(seed)-7])
	flipped := append([]byte(nil), seed...)
	flipped[100] ^= 0x55
	f.Add(flipped)
	f.Add([]byte{})
	root := f.TempDir()
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		n++
		dir := filepath.Join(root, "r-0")
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(LogFileName(dir, 0), data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenLog(dir, LogOpenOptions{Config: fuzzRecoverCfg, Log: logT(t), FS: noSyncFS{}})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer l.Close()
		st, err := os.Stat(LogFileName(dir, 0))
		if err != nil {
			t.Fatal(err)
		}
		kept := st.Size()
		if kept > int64(len(data)) || kept != l.Size() {
			t.Fatalf("kept %d of %d, log size %d", kept, len(data), l.Size())
		}
		rest := data[:kept]
		next := int64(0)
		var probes []int64
		for len(rest) > 0 {
			b, r, err := recordbatch.Next(rest)
			if err != nil {
				t.Fatalf("kept bytes hold an invalid batch: %v", err)
			}
			if err := recordbatch.Validate(b); err != nil || b.BaseOffset() < next {
				t.Fatalf("kept batch invalid: %v", err)
			}
			probes = append(probes, b.BaseOffset(), b.LastOffset())
			next = b.NextOffset()
			rest = r
		}
		if l.LogEndOffset() != next {
			t.Fatalf("LEO %d, want %d", l.LogEndOffset(), next)
		}
		for _, off := range probes {
			ri, err := l.Read(off, 100, next, true)
			if err != nil || ri.Size == 0 {
				t.Fatalf("read %d: %+v %v", off, ri, err)
			}
		}
		if _, err := l.AppendAsLeader(makeBatch(t, 1, 1, 1_700_000_000_000, recordbatch.None, true), 1); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		if !bytes.HasPrefix(data, data[:kept]) {
			t.Fatal("unreachable")
		}
	})
}

var fuzzRecoverCfg = func() LogConfig {
	c, _ := NewLogConfig(nil, map[string]string{"segment.index.bytes": "4096", "index.interval.bytes": "50"})
	return c
}()

// noSyncFS skips fsyncs: fuzzing checks logic, not durability, and fsync dominates its cost.
type noSyncFS struct{ OSFS }

type noSyncFile struct{ File }

func (noSyncFile) Sync() error { return nil }

func (n noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := n.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

func (noSyncFS) SyncDir(string) error { return nil }
