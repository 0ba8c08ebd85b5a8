package msgset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// srcRecord is a record of a test v2 batch, with absolute offset and timestamp.
type srcRecord struct {
	off, ts    int64
	key, value []byte
}

// v2Batch builds a magic 2 batch of recs (offsets may have gaps, as after compaction).
func v2Batch(t testing.TB, codec recordbatch.Codec, attrs int16, maxTs int64, recs ...srcRecord) recordbatch.Batch {
	t.Helper()
	base, baseTs := recs[0].off, recs[0].ts
	h := recordbatch.Header{BaseOffset: base, Attributes: attrs, LastOffsetDelta: int32(recs[len(recs)-1].off - base),
		BaseTimestamp: baseTs, MaxTimestamp: maxTs, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	if attrs&recordbatch.AttrTransactional != 0 || attrs&recordbatch.AttrControl != 0 {
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = 7, 0, 0
	}
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(r.off - base), TimestampDelta: r.ts - baseTs, Key: r.key, Value: r.value,
			Headers: []recordbatch.RecordHeader{{Key: "h", Value: []byte("dropped")}}}
		if h.MaxTimestamp < r.ts && attrs&recordbatch.AttrLogAppendTime == 0 {
			h.MaxTimestamp = r.ts
		}
	}
	b, err := recordbatch.Build(h, rs, codec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func controlBatch(t testing.TB, off int64) recordbatch.Batch {
	// A commit marker: key version 0, type 1; value version 0, coordinator epoch 0.
	return v2Batch(t, recordbatch.None, recordbatch.AttrControl|recordbatch.AttrTransactional, 0,
		srcRecord{off: off, ts: 50, key: []byte{0, 0, 0, 1}, value: []byte{0, 0, 0, 0, 0, 0}})
}

func concatBatches(bs ...recordbatch.Batch) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// expected is what a message of srcRecord r looks like after down-conversion.
func expected(r srcRecord, magic int8, lat bool, appendTime int64) decodedMessage {
	m := decodedMessage{Offset: r.off, Magic: magic, Timestamp: r.ts, Key: r.key, Value: r.value}
	if lat {
		m.Timestamp = appendTime
	}
	if magic == MagicV0 {
		m.Timestamp = NoTimestamp
	} else if lat {
		m.Attributes = AttrLogAppendTime
	}
	return m
}

func checkMessages(t *testing.T, got, want []decodedMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d:\n%+v", len(got), len(want), got)
	}
	for i := range want {
		if !equalMessage(got[i], want[i]) {
			t.Fatalf("message %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestDownConvert(t *testing.T) {
	recs := func(from int64, n int, prefix string) []srcRecord {
		var rs []srcRecord
		for i := 0; i < n; i++ {
			rs = append(rs, srcRecord{off: from + int64(i), ts: 1000 + from*10 + int64(i%3),
				key: []byte(fmt.Sprintf("%s-k%d", prefix, i)), value: []byte(fmt.Sprintf("%s-v%d", prefix, i))})
		}
		return rs
	}
	plain := recs(0, 4, "plain")
	plain[1].key = nil      // null key
	plain[2].value = nil    // tombstone
	plain[3].key = []byte{} // empty, not null
	lat := recs(4, 3, "lat")
	gz := recs(7, 3, "gzip")
	sn := recs(10, 2, "snappy")
	lz := recs(12, 3, "lz4")
	txn := recs(15, 2, "txn") // an aborted transaction: read_uncommitted sees it
	after := recs(18, 2, "after")
	const appendTime = 777777
	batches := []recordbatch.Batch{
		v2Batch(t, recordbatch.None, 0, 0, plain...),
		v2Batch(t, recordbatch.None, recordbatch.AttrLogAppendTime, appendTime, lat...),
		v2Batch(t, recordbatch.Gzip, 0, 0, gz...),
		v2Batch(t, recordbatch.Snappy, 0, 0, sn...),
		v2Batch(t, recordbatch.LZ4, 0, 0, lz...),
		v2Batch(t, recordbatch.None, recordbatch.AttrTransactional, 0, txn...),
		controlBatch(t, 17),
		v2Batch(t, recordbatch.Gzip, recordbatch.AttrLogAppendTime, appendTime, after...),
	}
	for _, magic := range []int8{MagicV0, MagicV1} {
		var want []decodedMessage
		for _, r := range plain[2:] { // firstOffset 2 drops plain's first two records
			want = append(want, expected(r, magic, false, 0))
		}
		for _, r := range lat {
			want = append(want, expected(r, magic, true, appendTime))
		}
		for _, group := range [][]srcRecord{gz, sn, lz, txn} {
			for _, r := range group {
				want = append(want, expected(r, magic, false, 0))
			}
		}
		for _, r := range after {
			want = append(want, expected(r, magic, true, appendTime))
		}
		out, st, err := DownConvert([]byte("x"), batches, magic, 2)
		if err != nil {
			t.Fatal(err)
		}
		if out[0] != 'x' {
			t.Fatal("dst prefix lost")
		}
		got, rest := decodeSet(t, out[1:])
		if len(rest) != 0 {
			t.Fatalf("%d bytes left", len(rest))
		}
		checkMessages(t, got, want)
		if st.Messages != int64(len(want)) || st.TemporaryBytes <= int64(len(concatBatches(batches...)))/2 {
			t.Fatalf("stats %+v", st)
		}
		// A compressed batch keeps its records before firstOffset (one wrapper) and its codec.
		out, _, err = DownConvert(nil, batches[2:3], magic, 8)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := decodeSet(t, out); len(got) != 3 || readOne(t, out).Attributes&AttrCodecMask != int8(recordbatch.Gzip) {
			t.Fatalf("compressed batch from the middle: %+v", got)
		}
	}
	// zstd anywhere fails the call before anything is written; control batches alone give nothing.
	zs := v2Batch(t, recordbatch.Zstd, 0, 0, recs(30, 2, "z")...)
	if out, _, err := DownConvert([]byte("x"), []recordbatch.Batch{batches[0], zs}, MagicV1, 0); !errors.Is(err, ErrDownConvertZstd) || string(out) != "x" {
		t.Fatalf("zstd: %q %v", out, err)
	}
	if out, st, err := DownConvert(nil, []recordbatch.Batch{controlBatch(t, 5)}, MagicV1, 0); err != nil || len(out) != 0 || st.Messages != 0 {
		t.Fatalf("control only: %q %+v %v", out, st, err)
	}
}

func newLazy(t *testing.T, src []byte, magic int8, firstOffset int64) *Lazy {
	t.Helper()
	l, err := NewLazy(bytes.NewReader(src), int64(len(src)), magic, firstOffset)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func checkOverflow(t *testing.T, pad []byte) {
	t.Helper()
	if len(pad) >= 8 && int64(binary.BigEndian.Uint64(pad)) != -1 {
		t.Fatalf("overflow offset %x", pad[:8])
	}
	if len(pad) >= 12 {
		if n := int(int32(binary.BigEndian.Uint32(pad[8:]))); n != max(len(pad)+1, recordbatch.HeaderSize) {
			t.Fatalf("overflow size %d for %d remaining bytes", n, len(pad))
		}
	}
}

func TestLazySizes(t *testing.T) {
	// small is a plain batch of 20 one-byte records at off...off+19, 2 bytes of source each.
	small := func(off int64) recordbatch.Batch {
		var recs []srcRecord
		for i := int64(0); i < 20; i++ {
			recs = append(recs, srcRecord{off: off + i, ts: 1, value: []byte{byte(i)}})
		}
		return v2Batch(t, recordbatch.None, 0, 0, recs...)
	}
	t.Run("empty", func(t *testing.T) {
		l := newLazy(t, nil, MagicV1, 0)
		if l.Size() != 0 || len(l.AppendTo(nil)) != 0 {
			t.Fatalf("size %d", l.Size())
		}
	})
	t.Run("partial first batch", func(t *testing.T) {
		b := small(0)
		if l := newLazy(t, b[:len(b)-1], MagicV1, 0); l.Size() != 0 {
			t.Fatalf("size %d", l.Size())
		}
	})
	t.Run("larger than the source", func(t *testing.T) {
		// Small records grow in magic 0/1 (a full header each): the first chunk (one batch)
		// sets the size, and the rest of the data is cut at it.
		src := concatBatches(small(0), small(20), small(40))
		conv0, _, _ := DownConvert(nil, []recordbatch.Batch{small(0)}, MagicV1, 0)
		l := newLazy(t, src, MagicV1, 0)
		if l.Size() != max(int64(len(src)), int64(len(conv0))) {
			t.Fatalf("size %d, source %d, first chunk %d", l.Size(), len(src), len(conv0))
		}
		out := l.AppendTo(nil)
		if int64(len(out)) != l.Size() {
			t.Fatalf("wrote %d of %d", len(out), l.Size())
		}
		all, _, _ := DownConvert(nil, []recordbatch.Batch{small(0), small(20), small(40)}, MagicV1, 0)
		if !bytes.Equal(out, all[:len(out)]) {
			t.Fatal("output is not a prefix of the full conversion")
		}
		got, rest := decodeSet(t, out)
		if len(got) < 2 || len(rest) == 0 {
			t.Fatalf("%d messages, %d partial bytes", len(got), len(rest))
		}
		st := l.Stats()
		if st.Messages != 60 || st.TemporaryBytes == 0 {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("control only", func(t *testing.T) {
		l := newLazy(t, concatBatches(controlBatch(t, 3), controlBatch(t, 4)), MagicV0, 3)
		out := l.AppendTo(nil)
		if len(out) != 12 {
			t.Fatalf("%d bytes", len(out))
		}
		checkOverflow(t, out)
		if got, rest := decodeSet(t, out); len(got) != 0 || len(rest) != 12 {
			t.Fatal("overflow decoded as a message")
		}
	})
	t.Run("padding", func(t *testing.T) {
		// Compressed batches shrink little; a partial batch at the end of the source adds
		// bytes no message fills: an overflow message pads the response to its size.
		var recs []srcRecord
		for i := 0; i < 50; i++ {
			recs = append(recs, srcRecord{off: int64(i), ts: 5, value: bytes.Repeat([]byte("abc"), 50)})
		}
		b1 := v2Batch(t, recordbatch.Gzip, 0, 0, recs[:25]...)
		b2 := v2Batch(t, recordbatch.Gzip, 0, 0, recs[25:]...)
		b3 := small(50)
		src := concatBatches(controlBatch(t, 0), b1, b2, b3[:len(b3)-3])
		l := newLazy(t, src, MagicV1, 0)
		out := l.AppendTo(nil)
		if int64(len(out)) != int64(len(src)) || l.Size() != int64(len(src)) {
			t.Fatalf("size %d, wrote %d, source %d", l.Size(), len(out), len(src))
		}
		got, rest := decodeSet(t, out)
		if len(got) != 50 {
			t.Fatalf("%d messages", len(got))
		}
		for i, m := range got {
			if m.Offset != int64(i) { // each message once, in order
				t.Fatalf("message %d has offset %d", i, m.Offset)
			}
		}
		checkOverflow(t, rest)
		if l.Err() != nil {
			t.Fatal(l.Err())
		}
	})
	t.Run("zstd first", func(t *testing.T) {
		zs := v2Batch(t, recordbatch.Zstd, 0, 0, srcRecord{off: 0, ts: 1, value: []byte("z")})
		src := concatBatches(controlBatch(t, 0), zs)
		if _, err := NewLazy(bytes.NewReader(src), int64(len(src)), MagicV1, 0); !errors.Is(err, ErrDownConvertZstd) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("zstd later", func(t *testing.T) {
		// A zstd batch past the first chunk ends the conversion there: its whole chunk (here
		// also the batch before it) becomes padding, as Kafka's send does; the consumer's next
		// fetch starts after what it got and, at the zstd batch, gets the error.
		gz := func(off int64) recordbatch.Batch {
			return v2Batch(t, recordbatch.Gzip, 0, 0, srcRecord{off: off, ts: 1, value: bytes.Repeat([]byte("a"), 500)})
		}
		src := concatBatches(gz(0), gz(1), v2Batch(t, recordbatch.Zstd, 0, 0, srcRecord{off: 2, ts: 1, value: []byte("z")}))
		l := newLazy(t, src, MagicV1, 0)
		got, rest := decodeSet(t, l.AppendTo(nil))
		if len(got) != 1 || !errors.Is(l.Err(), ErrDownConvertZstd) {
			t.Fatalf("%d messages, err %v", len(got), l.Err())
		}
		checkOverflow(t, rest)
	})
	t.Run("chunks", func(t *testing.T) {
		// More than one 128 KiB chunk, converted lazily, equals the eager conversion.
		rng := rand.New(rand.NewSource(1))
		var bs []recordbatch.Batch
		for i := int64(0); i < 40; i++ {
			var recs []srcRecord
			for j := int64(0); j < 10; j++ {
				v := make([]byte, 1000)
				rng.Read(v) // incompressible: the source passes 128 KiB
				recs = append(recs, srcRecord{off: i*10 + j, ts: i, key: []byte{byte(j)}, value: v})
			}
			bs = append(bs, v2Batch(t, recordbatch.Snappy, 0, 0, recs...))
		}
		src := concatBatches(bs...)
		all, _, err := DownConvert(nil, bs, MagicV1, 0)
		if err != nil {
			t.Fatal(err)
		}
		l := newLazy(t, src, MagicV1, 0)
		var buf bytes.Buffer
		n, err := l.WriteTo(&buf)
		if err != nil || n != l.Size() {
			t.Fatalf("wrote %d of %d: %v", n, l.Size(), err)
		}
		out := buf.Bytes()
		if len(src) < lazyMaxReadSize*2 {
			t.Fatalf("source of %d bytes", len(src))
		}
		if len(all) > len(out) { // cut at the response size
			if !bytes.Equal(out, all[:len(out)]) {
				t.Fatal("lazy output is not a prefix of the eager one")
			}
		} else {
			if !bytes.Equal(out[:len(all)], all) {
				t.Fatalf("lazy output (%d bytes) does not start with the eager one (%d bytes)", len(out), len(all))
			}
			checkOverflow(t, out[len(all):])
		}
		if got := l.Stats().Messages; got != 400 {
			t.Fatalf("%d messages counted", got)
		}
	})
}

// FuzzLazy: whatever the source bytes, the conversion never panics and writes exactly
// Size bytes, whose complete messages all pass their CRC.
func FuzzLazy(f *testing.F) {
	rec := func(off int64) srcRecord { return srcRecord{off: off, ts: 3, key: []byte("k"), value: []byte("value")} }
	f.Add([]byte(v2Batch(f, recordbatch.None, 0, 0, rec(0), rec(1))), int64(0), true)
	f.Add([]byte(v2Batch(f, recordbatch.Gzip, recordbatch.AttrLogAppendTime, 9, rec(5), rec(7))), int64(6), false)
	f.Add(concatBatches(controlBatch(f, 0), v2Batch(f, recordbatch.LZ4, 0, 0, rec(1))), int64(1), false)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 50, 0, 0, 0, 0, 2, 1, 2, 3}, int64(0), true)
	huge := append([]byte(nil), v2Batch(f, recordbatch.None, 0, 0, rec(0))...)
	binary.BigEndian.PutUint32(huge[57:], 0x7fffffff) // a record count the bytes cannot hold
	f.Add(huge, int64(0), false)
	f.Fuzz(func(t *testing.T, src []byte, firstOffset int64, v0 bool) {
		magic := MagicV1
		if v0 {
			magic = MagicV0
		}
		l, err := NewLazy(bytes.NewReader(src), int64(len(src)), magic, firstOffset)
		if err != nil {
			return
		}
		if l.Size() < 0 || l.Size() > 10*int64(len(src))+1<<20 {
			t.Fatalf("size %d for %d source bytes", l.Size(), len(src))
		}
		out := l.AppendTo(nil)
		if int64(len(out)) != l.Size() {
			t.Fatalf("wrote %d of %d", len(out), l.Size())
		}
		decodeSet(t, out)
	})
}

// TestDownConvertDecodes: what the down-converter writes, the package's own decoder (the
// Produce v0-v2 path's) reads back as the same messages, every codec and both magics.
func TestDownConvertDecodes(t *testing.T) {
	var bs []recordbatch.Batch
	off := int64(0)
	for _, codec := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4} {
		var recs []srcRecord
		for i := 0; i < 5; i++ {
			r := srcRecord{off: off, ts: 1000 + off, key: []byte(fmt.Sprint("k", off)), value: []byte(fmt.Sprint("v", off))}
			if i == 2 {
				r.key, r.value = nil, nil
			}
			recs = append(recs, r)
			off++
		}
		bs = append(bs, v2Batch(t, codec, 0, 0, recs...))
	}
	for _, magic := range []int8{MagicV0, MagicV1} {
		out, _, err := DownConvert(nil, bs, magic, 0)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := decodeSet(t, out)
		got, err := Decode(out)
		if err != nil {
			t.Fatalf("magic %d: Decode: %v", magic, err)
		}
		if len(got) != len(want) || len(got) != 20 {
			t.Fatalf("magic %d: %d messages decoded, %d written", magic, len(got), len(want))
		}
		for i := range got {
			g := decodedMessage{got[i].Offset, got[i].Magic, got[i].Attributes, got[i].Timestamp, got[i].Key, got[i].Value}
			if !equalMessage(g, want[i]) {
				t.Fatalf("magic %d message %d: Decode %+v, written %+v", magic, i, g, want[i])
			}
		}
	}
}

// BenchmarkLazy converts 1 MiB of batches (100 records of 100 bytes each) to magic 1, as a
// Fetch v3 of a full partition does.
func BenchmarkLazy(b *testing.B) {
	for _, codec := range []recordbatch.Codec{recordbatch.None, recordbatch.LZ4} {
		b.Run(codec.String(), func(b *testing.B) {
			rng := rand.New(rand.NewSource(1))
			var src []byte
			for off := int64(0); len(src) < 1<<20; {
				var recs []srcRecord
				for i := 0; i < 100; i++ {
					v := make([]byte, 100)
					rng.Read(v[:50]) // half random: compressible by half
					recs = append(recs, srcRecord{off: off, ts: 1, key: []byte("key"), value: v})
					off++
				}
				src = append(src, v2Batch(b, codec, 0, 0, recs...)...)
			}
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			var out []byte
			for b.Loop() {
				l, err := NewLazy(bytes.NewReader(src), int64(len(src)), MagicV1, 0)
				if err != nil {
					b.Fatal(err)
				}
				out = l.AppendTo(out[:0])
			}
		})
	}
}
