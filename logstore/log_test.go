package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// logT sends logs to t.Log.
func logT(t testing.TB) *logrus.Entry {
	lg := logrus.New()
	lg.SetOutput(logTWriter{t})
	lg.SetLevel(logrus.DebugLevel)
	return logrus.NewEntry(lg)
}

type logTWriter struct{ t testing.TB }

func (w logTWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// stepClock is a settable clock.
type stepClock struct{ ms atomic.Int64 }

func newStepClock(ms int64) *stepClock { c := &stepClock{}; c.ms.Store(ms); return c }
func (c *stepClock) Now() time.Time    { return time.UnixMilli(c.ms.Load()) }
func (c *stepClock) Add(d time.Duration) {
	c.ms.Add(d.Milliseconds())
}

// makeBatch builds a producer batch (baseOffset 0) of n records with values of size vsize.
func makeBatch(t testing.TB, n, vsize int, ts int64, codec recordbatch.Codec, keyed bool) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, vsize)
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Value: v}
		if keyed {
			recs[i].Key = []byte(fmt.Sprintf("k%d", i))
		}
	}
	h := recordbatch.Header{BaseOffset: 0, PartitionLeaderEpoch: -1, LastOffsetDelta: int32(n - 1),
		BaseTimestamp: ts, MaxTimestamp: ts + int64(n-1), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	b, err := recordbatch.Build(h, recs, codec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type testLogOpts struct {
	cfg      map[string]string
	clock    *stepClock
	fs       FS
	clean    bool
	rp       int64
	onIOErr  func(error)
	noCreate bool
}

func openTestLog(t testing.TB, dir string, o testLogOpts) *Log {
	t.Helper()
	cfg, err := NewLogConfig(nil, o.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.clock == nil {
		o.clock = newStepClock(time.Now().UnixMilli())
	}
	l, err := OpenLog(dir, LogOpenOptions{Config: cfg, FS: o.fs, Clock: o.clock.Now, Log: logT(t),
		CleanShutdown: o.clean, RecoveryPoint: o.rp, OnIOError: o.onIOErr})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func readAllBatches(t testing.TB, l *Log, from int64) []recordbatch.Batch {
	t.Helper()
	var out []recordbatch.Batch
	off := from
	for off < l.LogEndOffset() {
		ri, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		data, err := ri.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			t.Fatalf("empty read at %d (LEO %d)", off, l.LogEndOffset())
		}
		for len(data) > 0 {
			b, rest, err := recordbatch.Next(data)
			if err != nil {
				break // partial trailing batch
			}
			data = rest
			if b.LastOffset() < off {
				continue
			}
			out = append(out, append(recordbatch.Batch(nil), b...))
			off = b.NextOffset()
		}
	}
	return out
}

func TestAppendReadBasic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	defer l.Close()
	for i := 0; i < 10; i++ {
		info, err := l.AppendAsLeader(makeBatch(t, 5, 10, clock.Now().UnixMilli(), recordbatch.None, false), 3)
		if err != nil {
			t.Fatal(err)
		}
		if info.FirstOffset != int64(i*5) || info.LastOffset != int64(i*5+4) || info.NumRecords != 5 || info.LogAppendTime != -1 {
			t.Fatalf("append %d: %+v", i, info)
		}
	}
	if l.LogEndOffset() != 50 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	bs := readAllBatches(t, l, 0)
	if len(bs) != 10 {
		t.Fatalf("read %d batches", len(bs))
	}
	for i, b := range bs {
		if b.BaseOffset() != int64(i*5) || b.PartitionLeaderEpoch() != 3 || !b.ValidCRC() {
			t.Fatalf("batch %d: base %d epoch %d crc ok %v", i, b.BaseOffset(), b.PartitionLeaderEpoch(), b.ValidCRC())
		}
	}
	// Read from the middle of a batch starts at that batch.
	ri, err := l.Read(7, 1<<20, 50, true)
	if err != nil {
		t.Fatal(err)
	}
	if ri.FirstBatchOffset != 5 {
		t.Fatalf("first batch %d", ri.FirstBatchOffset)
	}
	// maxOffset bound excludes the batch holding it.
	ri, _ = l.Read(0, 1<<20, 10, true)
	data, _ := ri.Bytes()
	if got := len(data); got != 2*len(bs[0]) {
		t.Fatalf("bounded read %d bytes, want %d", got, 2*len(bs[0]))
	}
	// Out of range.
	if _, err := l.Read(51, 100, 51, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past LEO: %v", err)
	}
	// At the LEO: empty.
	if ri, err := l.Read(50, 100, 50, true); err != nil || ri.Size != 0 {
		t.Fatalf("read at LEO: %v %v", ri, err)
	}
	// KIP-74: a limit smaller than the first batch still returns it whole with minOneMessage.
	ri, _ = l.Read(0, 10, 50, true)
	if ri.Size != int64(len(bs[0])) {
		t.Fatalf("minOneMessage size %d", ri.Size)
	}
	ri, _ = l.Read(0, 10, 50, false)
	if ri.Size != 10 {
		t.Fatalf("cut size %d", ri.Size)
	}
	if e, ok := l.LatestEpoch(); !ok || e != 3 {
		t.Fatalf("latest epoch %d %v", e, ok)
	}
	if ep, end := l.EndOffsetForEpoch(3); ep != 3 || end != 50 {
		t.Fatalf("end offset for epoch: %d %d", ep, end)
	}
}

func TestReopenAfterCleanShutdown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic-1")
	clock := newStepClock(1_700_000_000_000)
	cfg := map[string]string{"segment.bytes": "5000", "index.interval.bytes": "200"}
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: cfg})
	for i := 0; i < 60; i++ {
		if _, err := l.AppendAsLeader(makeBatch(t, 3, 50, clock.Now().UnixMilli()+int64(i), recordbatch.None, false), 1); err != nil {
			t.Fatal(err)
		}
	}
	before := readAllBatches(t, l, 0)
	nsegs := len(l.Segments())
	if nsegs < 3 {
		t.Fatalf("expected rolls, got %d segments", nsegs)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Inactive indexes were trimmed to whole entries.
	for _, s := range before[:0] {
		_ = s
	}
	l = openTestLog(t, dir, testLogOpts{clock: clock, cfg: cfg, clean: true})
	defer l.Close()
	if l.LogEndOffset() != 180 || len(l.Segments()) != nsegs {
		t.Fatalf("reopened LEO %d segments %d", l.LogEndOffset(), len(l.Segments()))
	}
	after := readAllBatches(t, l, 0)
	if len(after) != len(before) {
		t.Fatalf("%d batches after reopen, %d before", len(after), len(before))
	}
	for i := range before {
		if !bytes.Equal(before[i], after[i]) {
			t.Fatalf("batch %d differs after reopen", i)
		}
	}
	// Offsets found by index lookup land on every batch.
	for off := int64(0); off < 180; off += 7 {
		ri, err := l.Read(off, 1, 180, true)
		if err != nil {
			t.Fatal(err)
		}
		if ri.FirstBatchOffset > off || ri.FirstBatchOffset+3 <= off {
			t.Fatalf("read %d started at batch %d", off, ri.FirstBatchOffset)
		}
	}
	// Appends continue.
	info, err := l.AppendAsLeader(makeBatch(t, 1, 1, clock.Now().UnixMilli(), recordbatch.None, false), 2)
	if err != nil || info.FirstOffset != 180 {
		t.Fatalf("append after reopen: %+v %v", info, err)
	}
}

func TestFileNamesAndIndexEntrySizes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "names-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: map[string]string{"index.interval.bytes": "0", "segment.bytes": "1000"}})
	for i := 0; i < 20; i++ {
		if _, err := l.AppendAsLeader(makeBatch(t, 2, 40, clock.Now().UnixMilli()+int64(i), recordbatch.None, false), 0); err != nil {
			t.Fatal(err)
		}
	}
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		prefix := fmt.Sprintf("%020d", s.BaseOffset)
		if filepath.Base(s.LogFile) != prefix+".log" {
			t.Fatalf("log file %s", s.LogFile)
		}
		st, err := os.Stat(filepath.Join(dir, prefix+".index"))
		if err != nil {
			t.Fatal(err)
		}
		ts, err := os.Stat(filepath.Join(dir, prefix+".timeindex"))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size()%8 != 0 || ts.Size()%12 != 0 || st.Size() == 0 {
			t.Fatalf("%s: index %d bytes, timeindex %d bytes", prefix, st.Size(), ts.Size())
		}
		// With index.interval.bytes=0 every append after the first gets an entry.
		raw, _ := os.ReadFile(filepath.Join(dir, prefix+".index"))
		for i := 0; i+8 <= len(raw); i += 8 {
			rel := int32(uint32(raw[i])<<24 | uint32(raw[i+1])<<16 | uint32(raw[i+2])<<8 | uint32(raw[i+3]))
			if rel < 0 || int64(rel) > s.NextOffset-s.BaseOffset {
				t.Fatalf("bad relative offset %d", rel)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000000.log")); err != nil {
		t.Fatal(err)
	}
}

func TestBadInputLeavesLogUnchanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bad-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: map[string]string{"max.message.bytes": "2000"}})
	defer l.Close()
	if _, err := l.AppendAsLeader(makeBatch(t, 2, 10, clock.Now().UnixMilli(), recordbatch.None, false), 0); err != nil {
		t.Fatal(err)
	}
	good := func() []byte { return makeBatch(t, 2, 10, clock.Now().UnixMilli(), recordbatch.None, false) }
	badCRC := good()
	badCRC[len(badCRC)-1] ^= 0xff
	badMagic := good()
	badMagic[16] = 7
	oldMagic := good()
	oldMagic[16] = 1
	nonZeroBase := good()
	recordbatch.Batch(nonZeroBase).SetBaseOffset(5)
	countMismatch := good()
	countMismatch[60] = 3 // recordCount 3 vs lastOffsetDelta 1
	recordbatch.Batch(countMismatch).SetCRC()
	badFraming := good()
	badFraming[61] = 0x7f // first record length varint inflated
	recordbatch.Batch(badFraming).SetCRC()
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrCorruptMessage},
		{"short", good()[:8], ErrCorruptMessage},
		{"truncated", good()[:70], ErrCorruptMessage},
		{"oversized", makeBatch(t, 30, 100, clock.Now().UnixMilli(), recordbatch.None, false), ErrMessageTooLarge},
		{"bad crc", badCRC, ErrCorruptMessage},
		{"bad magic", badMagic, ErrCorruptMessage},
		{"old magic", oldMagic, ErrUnsupportedForMagic},
		{"nonzero base offset", nonZeroBase, ErrInvalidRecord},
		{"count mismatch", countMismatch, ErrInvalidRecord},
		{"bad framing", badFraming, ErrCorruptMessage},
		{"old timestamp", nil, ErrInvalidTimestamp},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := c.data
			if c.name == "old timestamp" {
				cfg, _ := NewLogConfig(nil, map[string]string{"message.timestamp.before.max.ms": "1000", "max.message.bytes": "2000"})
				l.SetConfig(cfg)
				defer func() { cfg, _ := NewLogConfig(nil, map[string]string{"max.message.bytes": "2000"}); l.SetConfig(cfg) }()
				data = makeBatch(t, 2, 10, clock.Now().UnixMilli()-5000, recordbatch.None, false)
			}
			leo, size := l.LogEndOffset(), l.Size()
			_, err := l.AppendAsLeader(data, 0)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if l.LogEndOffset() != leo || l.Size() != size {
				t.Fatalf("log changed: LEO %d->%d size %d->%d", leo, l.LogEndOffset(), size, l.Size())
			}
		})
	}
	var rve *RecordValidationError
	cfg, _ := NewLogConfig(nil, map[string]string{"cleanup.policy": "compact"})
	l.SetConfig(cfg)
	_, err := l.AppendAsLeader(good(), 0)
	if !errors.As(err, &rve) || !errors.Is(err, ErrInvalidRecord) || len(rve.Records) != 2 {
		t.Fatalf("unkeyed record on compacted topic: %v", err)
	}
	if _, err := l.AppendAsLeader(makeBatch(t, 2, 10, clock.Now().UnixMilli(), recordbatch.None, true), 0); err != nil {
		t.Fatalf("keyed record on compacted topic: %v", err)
	}
}

func TestLogAppendTimeAndRecompression(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lat-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: map[string]string{"message.timestamp.type": "LogAppendTime"}})
	defer l.Close()
	for _, codec := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd} {
		in := makeBatch(t, 4, 30, 1000, codec, false)
		info, err := l.AppendAsLeader(in, 0)
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		if info.LogAppendTime != clock.Now().UnixMilli() {
			t.Fatalf("log append time %d", info.LogAppendTime)
		}
	}
	for _, b := range readAllBatches(t, l, 0) {
		if !b.LogAppendTime() || b.MaxTimestamp() != clock.Now().UnixMilli() || !b.ValidCRC() {
			t.Fatalf("batch %d: LAT %v max %d crc %v", b.BaseOffset(), b.LogAppendTime(), b.MaxTimestamp(), b.ValidCRC())
		}
	}
	// compression.type=lz4 recompresses a gzip batch; the same codec is stored as is.
	cfg, _ := NewLogConfig(nil, map[string]string{"compression.type": "lz4"})
	l.SetConfig(cfg)
	gz := makeBatch(t, 4, 30, clock.Now().UnixMilli(), recordbatch.Gzip, false)
	info, err := l.AppendAsLeader(gz, 0)
	if err != nil {
		t.Fatal(err)
	}
	lz := makeBatch(t, 4, 30, clock.Now().UnixMilli(), recordbatch.LZ4, false)
	lzCopy := append([]byte(nil), lz...)
	if _, err := l.AppendAsLeader(lz, 0); err != nil {
		t.Fatal(err)
	}
	bs := readAllBatches(t, l, info.FirstOffset)
	if len(bs) != 2 || bs[0].Codec() != recordbatch.LZ4 || bs[1].Codec() != recordbatch.LZ4 {
		t.Fatalf("codecs after recompression: %d batches", len(bs))
	}
	if !bytes.Equal(bs[1][recordbatch.HeaderSize:], lzCopy[recordbatch.HeaderSize:]) {
		t.Fatal("same-codec batch was re-encoded")
	}
	n := 0
	if err := bs[0].ForEachRecord(true, func(r *recordbatch.Record) error {
		if r.OffsetDelta != int32(n) || len(r.Value) != 30 {
			return fmt.Errorf("record %d: %+v", n, r)
		}
		n++
		return nil
	}); err != nil || n != 4 {
		t.Fatalf("recompressed records: %v (%d)", err, n)
	}
}

func TestRollConditions(t *testing.T) {
	clock := newStepClock(1_700_000_000_000)
	t.Run("segment.bytes", func(t *testing.T) {
		l := openTestLog(t, filepath.Join(t.TempDir(), "r-0"), testLogOpts{clock: clock, cfg: map[string]string{"segment.bytes": "1000"}})
		defer l.Close()
		b := makeBatch(t, 1, 300, clock.Now().UnixMilli(), recordbatch.None, false)
		size := len(b)
		for i := 0; i < 6; i++ {
			if _, err := l.AppendAsLeader(makeBatch(t, 1, 300, clock.Now().UnixMilli(), recordbatch.None, false), 0); err != nil {
				t.Fatal(err)
			}
		}
		perSeg := 1000 / size
		if got, want := len(l.Segments()), (6+perSeg-1)/perSeg; got != want {
			t.Fatalf("%d segments, want %d", got, want)
		}
		// An append larger than segment.bytes is refused.
		if _, err := l.AppendAsLeader(makeBatch(t, 1, 1200, clock.Now().UnixMilli(), recordbatch.None, false), 0); !errors.Is(err, ErrRecordListTooLarge) {
			t.Fatalf("oversized append: %v", err)
		}
	})
	t.Run("segment.ms", func(t *testing.T) {
		l := openTestLog(t, filepath.Join(t.TempDir(), "r-1"), testLogOpts{clock: clock, cfg: map[string]string{"segment.ms": "60000"}})
		defer l.Close()
		t0 := clock.Now().UnixMilli()
		l.AppendAsLeader(makeBatch(t, 1, 10, t0, recordbatch.None, false), 0)
		l.AppendAsLeader(makeBatch(t, 1, 10, t0+30000, recordbatch.None, false), 0)
		if len(l.Segments()) != 1 {
			t.Fatal("rolled too early")
		}
		l.AppendAsLeader(makeBatch(t, 1, 10, t0+60001, recordbatch.None, false), 0)
		if s := l.Segments(); len(s) != 2 || s[1].BaseOffset != 2 {
			t.Fatalf("segments %+v", s)
		}
	})
	t.Run("index full", func(t *testing.T) {
		l := openTestLog(t, filepath.Join(t.TempDir(), "r-2"), testLogOpts{clock: clock, cfg: map[string]string{"segment.index.bytes": "32", "index.interval.bytes": "0"}})
		defer l.Close()
		for i := 0; i < 12; i++ {
			if _, err := l.AppendAsLeader(makeBatch(t, 1, 10, clock.Now().UnixMilli(), recordbatch.None, false), 0); err != nil {
				t.Fatal(err)
			}
		}
		// 4 offset-index entries (32/8) but only 2 time-index entries (32/12) fit: the time
		// index fills after 3 appends (the first is never indexed).
		if n := len(l.Segments()); n < 3 {
			t.Fatalf("%d segments", n)
		}
	})
	t.Run("relative offset overflow", func(t *testing.T) {
		l := openTestLog(t, filepath.Join(t.TempDir(), "r-3"), testLogOpts{clock: clock})
		defer l.Close()
		b := makeBatch(t, 1, 10, clock.Now().UnixMilli(), recordbatch.None, false)
		recordbatch.Batch(b).SetBaseOffset(0)
		if _, err := l.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
		far := makeBatch(t, 1, 10, clock.Now().UnixMilli(), recordbatch.None, false)
		recordbatch.Batch(far).SetBaseOffset(1 << 32)
		if _, err := l.AppendAsFollower(far); err != nil {
			t.Fatal(err)
		}
		if s := l.Segments(); len(s) != 2 || s[1].BaseOffset != 1<<32 {
			t.Fatalf("segments %+v", s)
		}
	})
}

func TestTruncate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "trunc-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: map[string]string{"segment.bytes": "600"}})
	defer l.Close()
	for i := 0; i < 20; i++ {
		if _, err := l.AppendAsLeader(makeBatch(t, 2, 50, clock.Now().UnixMilli(), recordbatch.None, false), int32(i/5)); err != nil {
			t.Fatal(err)
		}
	}
	l.UpdateHighWatermark(40)
	if err := l.TruncateTo(21); err != nil {
		t.Fatal(err)
	}
	// A truncation inside batch [20,21] drops the whole batch.
	if l.LogEndOffset() != 20 || l.HighWatermark() != 20 {
		t.Fatalf("LEO %d HW %d", l.LogEndOffset(), l.HighWatermark())
	}
	if e, _ := l.LatestEpoch(); e != 1 {
		t.Fatalf("latest epoch %d", e)
	}
	if got := len(readAllBatches(t, l, 0)); got != 10 {
		t.Fatalf("%d batches after truncation", got)
	}
	info, err := l.AppendAsLeader(makeBatch(t, 2, 50, clock.Now().UnixMilli(), recordbatch.None, false), 7)
	if err != nil || info.FirstOffset != 20 {
		t.Fatalf("append after truncation %+v %v", info, err)
	}
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || len(l.Segments()) != 1 {
		t.Fatalf("after full truncation: start %d LEO %d", l.LogStartOffset(), l.LogEndOffset())
	}
	b := makeBatch(t, 1, 5, clock.Now().UnixMilli(), recordbatch.None, false)
	recordbatch.Batch(b).SetBaseOffset(99)
	if _, err := l.AppendAsFollower(b); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("follower append below LEO: %v", err)
	}
	recordbatch.Batch(b).SetBaseOffset(100)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ts-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: map[string]string{"segment.bytes": "1000", "index.interval.bytes": "100"}})
	defer l.Close()
	t0 := clock.Now().UnixMilli()
	for i := 0; i < 30; i++ {
		// records at t0 + 10*i + {0,1,2}
		if _, err := l.AppendAsLeader(makeBatch(t, 3, 20, t0+int64(10*i), recordbatch.None, false), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		ts    int64
		off   int64
		found bool
	}{{t0, 0, true}, {t0 + 1, 1, true}, {t0 + 5, 3, true}, {t0 + 101, 31, true}, {t0 + 292, 89, true}, {t0 + 293, 0, false}} {
		off, ts, _, found, err := l.OffsetForTimestamp(c.ts)
		if err != nil || found != c.found || (found && (off != c.off || ts < c.ts)) {
			t.Fatalf("ts %d: got %d/%d/%v/%v, want %d", c.ts-t0, off, ts, found, err, c.off)
		}
	}
}

// partialFS writes only half of a batch before failing, and can fail fsyncs.
type partialFS struct {
	OSFS
	failWrite, failSync atomic.Bool
}

type partialFile struct {
	File
	fs *partialFS
}

func (p *partialFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := p.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &partialFile{File: f, fs: p}, nil
}

func (f *partialFile) WriteAt(b []byte, off int64) (int, error) {
	if f.fs.failWrite.Load() && filepath.Ext(f.Name()) == ".log" {
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, errors.New("injected: disk full")
	}
	return f.File.WriteAt(b, off)
}

func (f *partialFile) Sync() error {
	if f.fs.failSync.Load() {
		return errors.New("injected: fsync failed")
	}
	return f.File.Sync()
}

func TestFailedWriteLeavesNoPartialBatch(t *testing.T) {
	for _, mode := range []string{"write", "fsync"} {
		t.Run(mode, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "fail-0")
			clock := newStepClock(1_700_000_000_000)
			pfs := &partialFS{}
			var ioErrs atomic.Int32
			cfg := map[string]string{}
			if mode == "fsync" {
				cfg["flush.messages"] = "1"
			}
			l := openTestLog(t, dir, testLogOpts{clock: clock, fs: pfs, cfg: cfg, onIOErr: func(error) { ioErrs.Add(1) }})
			defer l.Close()
			if _, err := l.AppendAsLeader(makeBatch(t, 3, 20, clock.Now().UnixMilli(), recordbatch.None, false), 0); err != nil {
				t.Fatal(err)
			}
			size := l.Size()
			if mode == "write" {
				pfs.failWrite.Store(true)
			} else {
				pfs.failSync.Store(true)
			}
			_, err := l.AppendAsLeader(makeBatch(t, 3, 20, clock.Now().UnixMilli(), recordbatch.None, false), 0)
			if !errors.Is(err, ErrKafkaStorage) {
				t.Fatalf("got %v", err)
			}
			if ioErrs.Load() != 1 || !l.IsOffline() {
				t.Fatalf("io error hook called %d times, offline %v", ioErrs.Load(), l.IsOffline())
			}
			st, _ := os.Stat(LogFileName(dir, 0))
			if l.LogEndOffset() != 3 || l.Size() != size || st.Size() != size {
				t.Fatalf("partial batch visible: LEO %d size %d file %d (want %d)", l.LogEndOffset(), l.Size(), st.Size(), size)
			}
			if got := len(readAllBatches(t, l, 0)); got != 1 {
				t.Fatalf("%d batches readable", got)
			}
			if _, err := l.AppendAsLeader(makeBatch(t, 1, 1, clock.Now().UnixMilli(), recordbatch.None, false), 0); !errors.Is(err, ErrKafkaStorage) {
				t.Fatalf("offline log accepted an append: %v", err)
			}
		})
	}
}

func TestConcurrentReadersAndAppender(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conc-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: map[string]string{"segment.bytes": "20000", "index.interval.bytes": "500"}})
	defer l.Close()
	const appends = 400
	var wg sync.WaitGroup
	done := make(chan struct{})
	errc := make(chan error, 3)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int64(0)
			for {
				leo := l.LogEndOffset()
				if off >= leo {
					select {
					case <-done:
						if off >= l.LogEndOffset() {
							return
						}
					default:
						time.Sleep(50 * time.Microsecond)
					}
					continue
				}
				ri, err := l.Read(off, 4096, leo, true)
				if err != nil {
					errc <- err
					return
				}
				data, err := ri.Bytes()
				if err != nil {
					errc <- err
					return
				}
				for len(data) > 0 {
					b, rest, err := recordbatch.Next(data)
					if err != nil {
						break
					}
					if err := recordbatch.Validate(b); err != nil {
						errc <- fmt.Errorf("reader saw invalid batch at %d: %w", b.BaseOffset(), err)
						return
					}
					if b.NextOffset() > off {
						if b.BaseOffset() > off {
							errc <- fmt.Errorf("gap: wanted %d got batch %d", off, b.BaseOffset())
							return
						}
						off = b.NextOffset()
					}
					data = rest
				}
			}
		}()
	}
	for i := 0; i < appends; i++ {
		if _, err := l.AppendAsLeader(makeBatch(t, 4, 25, clock.Now().UnixMilli(), recordbatch.None, false), 0); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			l.UpdateHighWatermark(l.LogEndOffset())
		}
	}
	close(done)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("expected rolls during the run")
	}
}

func TestDeleteOldSegmentsAndReplace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "del-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock, cfg: map[string]string{"segment.bytes": "500", "file.delete.delay.ms": "0"}})
	defer l.Close()
	for i := 0; i < 10; i++ {
		l.AppendAsLeader(makeBatch(t, 1, 150, clock.Now().UnixMilli(), recordbatch.None, true), 0)
	}
	segs := l.Segments()
	// Nothing goes above the high watermark.
	if n, _ := l.DeleteOldSegments(func(SegmentInfo, *SegmentInfo) bool { return true }, "test"); n != 0 {
		t.Fatalf("deleted %d above HW 0", n)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	// Replace the first two segments with a cleaned copy holding only the first batch.
	var first []byte
	ri, _ := l.Read(0, 1, 10, true)
	first, _ = ri.Bytes()
	if err := l.replaceWithCleaned(segs[0].BaseOffset, []int64{segs[0].BaseOffset, segs[1].BaseOffset}, func(write func([]byte) error, _ func(AbortedTxn) error) error {
		return write(first)
	}); err != nil {
		t.Fatal(err)
	}
	if got := len(l.Segments()); got != len(segs)-1 {
		t.Fatalf("%d segments after replace, want %d", got, len(segs)-1)
	}
	bs := readAllBatches(t, l, 0)
	if bs[0].BaseOffset() != 0 || bs[1].BaseOffset() != segs[2].BaseOffset {
		t.Fatalf("after replace: batches %d, %d", bs[0].BaseOffset(), bs[1].BaseOffset())
	}
	n, err := l.DeleteOldSegments(func(SegmentInfo, *SegmentInfo) bool { return true }, "all expired")
	if err != nil {
		t.Fatal(err)
	}
	if n != len(segs)-1 || len(l.Segments()) != 1 || l.LogStartOffset() != 10 || l.Segments()[0].BaseOffset != 10 {
		t.Fatalf("deleted %d, segments %+v, start %d", n, l.Segments(), l.LogStartOffset())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".deleted" || filepath.Ext(e.Name()) == ".swap" {
			t.Fatalf("leftover %s", e.Name())
		}
	}
	_ = io.EOF
}

func TestAppendAsFollowerPartialAndEpochs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "follow-0")
	clock := newStepClock(1_700_000_000_000)
	l := openTestLog(t, dir, testLogOpts{clock: clock})
	defer l.Close()
	var fetch []byte
	off := int64(0)
	for i := 0; i < 4; i++ {
		b := recordbatch.Batch(makeBatch(t, 3, 10, clock.Now().UnixMilli(), recordbatch.None, false))
		b.SetBaseOffset(off)
		b.SetPartitionLeaderEpoch(int32(1 + i/2))
		off = b.NextOffset()
		fetch = append(fetch, b...)
	}
	// A fetch response cut inside the last batch: the partial batch is dropped.
	info, err := l.AppendAsFollower(fetch[:len(fetch)-5])
	if err != nil || info.FirstOffset != 0 || info.LastOffset != 8 || l.LogEndOffset() != 9 {
		t.Fatalf("follower append %+v %v LEO %d", info, err, l.LogEndOffset())
	}
	if got := l.EpochEntries(); len(got) != 2 || got[0] != (EpochEntry{1, 0}) || got[1] != (EpochEntry{2, 6}) {
		t.Fatalf("epochs %v", got)
	}
	// Only a partial batch: nothing appended, no error.
	last := fetch[len(fetch)-len(fetch)/4:]
	info, err = l.AppendAsFollower(last[:20])
	if err != nil || info.FirstOffset != -1 || l.LogEndOffset() != 9 {
		t.Fatalf("partial-only append %+v %v", info, err)
	}
	// Corrupt CRC from the leader is still refused.
	bad := append([]byte(nil), last...)
	bad[len(bad)-1] ^= 1
	if _, err := l.AppendAsFollower(bad); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("corrupt follower batch: %v", err)
	}
	if _, err := l.AppendAsFollower(last); err != nil || l.LogEndOffset() != 12 {
		t.Fatalf("last batch: %v LEO %d", err, l.LogEndOffset())
	}
	if ep, end := l.EndOffsetForEpoch(1); ep != 1 || end != 6 {
		t.Fatalf("EndOffsetForEpoch(1) = %d %d", ep, end)
	}
}

func TestAppendAsLeaderMultipleBatches(t *testing.T) {
	clock := newStepClock(1_700_000_000_000)
	for _, ct := range []string{"producer", "gzip"} {
		t.Run(ct, func(t *testing.T) {
			l := openTestLog(t, filepath.Join(t.TempDir(), "multi-0"), testLogOpts{clock: clock, cfg: map[string]string{"compression.type": ct}})
			defer l.Close()
			var in []byte
			for i := 0; i < 3; i++ {
				in = append(in, makeBatch(t, 2+i, 10, clock.Now().UnixMilli(), recordbatch.None, false)...)
			}
			info, err := l.AppendAsLeader(in, 4)
			if err != nil || info.FirstOffset != 0 || info.LastOffset != 8 || info.NumRecords != 9 {
				t.Fatalf("%+v %v", info, err)
			}
			bs := readAllBatches(t, l, 0)
			if len(bs) != 3 || bs[1].BaseOffset() != 2 || bs[2].BaseOffset() != 5 || bs[2].LastOffset() != 8 {
				t.Fatalf("%d batches", len(bs))
			}
			for _, b := range bs {
				if (ct == "gzip") != (b.Codec() == recordbatch.Gzip) || b.PartitionLeaderEpoch() != 4 {
					t.Fatalf("batch %d codec %s epoch %d", b.BaseOffset(), b.Codec(), b.PartitionLeaderEpoch())
				}
			}
		})
	}
}

// A leader that assigned an epoch at its log end and then lost leadership before appending
// leaves a trailing epoch entry; truncating to the log end must drop it, as
// UnifiedLog.truncateTo does, or the follower keeps sending that epoch and the new leader
// keeps reporting divergence.
func TestTruncateToLogEndDropsTrailingEpoch(t *testing.T) {
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), testLogOpts{})
	if _, err := l.AppendAsLeader(makeBatch(t, 3, 10, time.Now().UnixMilli(), recordbatch.None, false), 1); err != nil {
		t.Fatal(err)
	}
	if err := l.MaybeAssignEpochStartOffset(2, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if e, _ := l.LatestEpoch(); e != 2 {
		t.Fatalf("latest epoch %d, want 2", e)
	}
	if err := l.TruncateTo(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if e, _ := l.LatestEpoch(); e != 1 {
		t.Fatalf("latest epoch after truncating to the log end: %d, want 1", e)
	}
}
