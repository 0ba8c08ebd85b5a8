package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// bench16K is a 16 KiB-ish producer batch of 100-byte records.
func bench16K(b *testing.B) []byte {
	n := 16 << 10 / 107 // ~107 bytes per encoded 100-byte record
	return makeBatch(b, n, 100, time.Now().UnixMilli(), recordbatch.None, false)
}

// BenchmarkAppend compares AppendAsLeader of 16 KiB batches with a plain os.File write of
// the same bytes, in the same run; append_vs_raw is the throughput ratio (target >= 0.8).
func BenchmarkAppend(b *testing.B) {
	batch := bench16K(b)
	var rawNsPerOp float64
	b.Run("raw", func(b *testing.B) {
		dir := b.TempDir()
		f, err := os.Create(filepath.Join(dir, "raw-0.log"))
		if err != nil {
			b.Fatal(err)
		}
		defer func() { f.Close() }()
		buf := append([]byte(nil), batch...)
		b.SetBytes(int64(len(batch)))
		b.ResetTimer()
		start := time.Now()
		var pos int64
		for i := 0; i < b.N; i++ {
			copy(buf, batch) // the log copies nothing, but the caller's bytes are fresh each time
			if _, err := f.WriteAt(buf, pos); err != nil {
				b.Fatal(err)
			}
			pos += int64(len(buf))
			if pos > 1<<30 { // a new file per GiB, as the log rolls segments
				f.Close()
				if f, err = os.Create(filepath.Join(dir, fmt.Sprintf("raw-%d.log", i))); err != nil {
					b.Fatal(err)
				}
				pos = 0
			}
		}
		rawNsPerOp = float64(time.Since(start).Nanoseconds()) / float64(b.N)
	})
	b.Run("log", func(b *testing.B) {
		l, err := OpenLog(filepath.Join(b.TempDir(), "bench-0"), LogOpenOptions{Config: DefaultLogConfig()})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		buf := append([]byte(nil), batch...)
		b.SetBytes(int64(len(batch)))
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			copy(buf, batch)
			if _, err := l.AppendAsLeader(buf, 1); err != nil {
				b.Fatal(err)
			}
		}
		ns := float64(time.Since(start).Nanoseconds()) / float64(b.N)
		b.ReportMetric(float64(len(batch)/107)*1e9/ns, "records/s")
		if rawNsPerOp > 0 {
			b.ReportMetric(rawNsPerOp/ns, "append_vs_raw")
		}
	})
}

// BenchmarkRead compares sequential Read+pread of a log with plain sequential ReadAt of the
// same file; read_vs_raw is the throughput ratio.
func BenchmarkRead(b *testing.B) {
	batch := bench16K(b)
	l, err := OpenLog(filepath.Join(b.TempDir(), "bench-0"), LogOpenOptions{Config: DefaultLogConfig()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 4096; i++ { // 64 MiB
		if _, err := l.AppendAsLeader(append([]byte(nil), batch...), 1); err != nil {
			b.Fatal(err)
		}
	}
	seg := l.Segments()[0]
	const chunk = 1 << 20
	var rawNs float64
	b.Run("raw", func(b *testing.B) {
		f, err := os.Open(seg.LogFile)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, chunk)
		b.SetBytes(chunk)
		b.ResetTimer()
		start := time.Now()
		pos := int64(0)
		for i := 0; i < b.N; i++ {
			n, _ := f.ReadAt(buf, pos)
			pos += int64(n)
			if pos >= seg.Size {
				pos = 0
			}
		}
		rawNs = float64(time.Since(start).Nanoseconds()) / float64(b.N)
	})
	b.Run("log", func(b *testing.B) {
		buf := make([]byte, chunk+len(batch))
		b.SetBytes(chunk)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		off := int64(0)
		leo := l.LogEndOffset()
		for i := 0; i < b.N; i++ {
			ri, err := l.Read(off, chunk, leo, true)
			if err != nil {
				b.Fatal(err)
			}
			r := ri.Regions[0]
			n, _ := r.File.ReadAt(buf[:r.Len], r.Pos)
			// Continue after the last whole batch.
			rest := buf[:n]
			for len(rest) > 0 {
				bt, next, err := recordbatch.Next(rest)
				if err != nil {
					break
				}
				off = bt.NextOffset()
				rest = next
			}
			if off >= leo {
				off = 0
			}
		}
		ns := float64(time.Since(start).Nanoseconds()) / float64(b.N)
		if rawNs > 0 {
			b.ReportMetric(rawNs/ns, "read_vs_raw")
		}
	})
}

// BenchmarkIndexLookup must report 0 allocs/op.
func BenchmarkIndexLookup(b *testing.B) {
	dir := b.TempDir()
	oi, err := openOffsetIndex(OSFS{}, filepath.Join(dir, "00000000000000000000.index"), 0, 10<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer oi.close()
	for i := int64(0); i < 100000; i++ {
		if err := oi.Append(i*10+5, i*4096); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var sink int64
	for i := 0; i < b.N; i++ {
		off, pos := oi.Lookup(int64(i*7919) % 1000000)
		sink += off + pos
	}
	_ = sink
}

func TestIndexLookupNoAlloc(t *testing.T) {
	oi, err := openOffsetIndex(OSFS{}, filepath.Join(t.TempDir(), "00000000000000000100.index"), 100, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer oi.close()
	for i := int64(0); i < 100; i++ {
		oi.Append(100+i*3+2, i*50)
	}
	if a := testing.AllocsPerRun(1000, func() { oi.Lookup(200) }); a != 0 {
		t.Fatalf("%v allocs per lookup", a)
	}
	for _, c := range []struct{ target, off, pos int64 }{{50, 100, 0}, {100, 100, 0}, {102, 102, 0}, {104, 102, 0}, {105, 105, 50}, {10000, 399, 4950}} {
		off, pos := oi.Lookup(c.target)
		if off != c.off || pos != c.pos {
			t.Errorf("lookup %d = (%d, %d), want (%d, %d)", c.target, off, pos, c.off, c.pos)
		}
	}
	ti, err := openTimeIndex(OSFS{}, filepath.Join(t.TempDir(), "00000000000000000100.timeindex"), 100, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer ti.close()
	ti.MaybeAppend(1000, 105, false)
	ti.MaybeAppend(1000, 106, false) // not larger: skipped
	ti.MaybeAppend(2000, 110, false)
	if ti.Entries() != 2 {
		t.Fatalf("%d time index entries", ti.Entries())
	}
	for _, c := range []struct{ ts, wantTs, wantOff int64 }{{999, -1, 100}, {1000, 1000, 105}, {1999, 1000, 105}, {5000, 2000, 110}} {
		if ts, off := ti.Lookup(c.ts); ts != c.wantTs || off != c.wantOff {
			t.Errorf("time lookup %d = (%d, %d)", c.ts, ts, off)
		}
	}
	ti.TruncateTo(110)
	if ti.Entries() != 1 {
		t.Fatalf("after truncate %d entries", ti.Entries())
	}
	if err := ti.trimToValidSize(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(ti.path); st.Size() != 12 {
		t.Fatalf("trimmed time index is %d bytes", st.Size())
	}
}

// BenchmarkOpenLog opens a one-segment partition (100 small batches) after a clean and an
// unclean shutdown; per-op time x 10,000 estimates a broker's start-up with 10k partitions.
func BenchmarkOpenLog(b *testing.B) {
	for _, clean := range []bool{true, false} {
		name := "unclean"
		if clean {
			name = "clean"
		}
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "open-0")
			l, err := OpenLog(dir, LogOpenOptions{Config: DefaultLogConfig()})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < 100; i++ {
				l.AppendAsLeader(makeBatch(b, 5, 50, time.Now().UnixMilli(), recordbatch.None, false), 1)
			}
			l.Flush()
			l.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l, err := OpenLog(dir, LogOpenOptions{Config: DefaultLogConfig(), CleanShutdown: clean})
				if err != nil {
					b.Fatal(err)
				}
				if l.LogEndOffset() != 500 {
					b.Fatalf("LEO %d", l.LogEndOffset())
				}
				l.Close()
			}
		})
	}
}
