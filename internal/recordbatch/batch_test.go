package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/klauspost/compress/snappy"
)

func testRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{OffsetDelta: int32(i), TimestampDelta: int64(i * 3),
			Key: []byte(fmt.Sprintf("k%d", i)), Value: bytes.Repeat([]byte{byte(i)}, 50)}
		if i%2 == 0 {
			recs[i].Headers = []RecordHeader{{Key: "a", Value: []byte("b")}, {Key: "n", Value: nil}}
		}
		if i == 3 {
			recs[i].Value = nil // tombstone
		}
	}
	return recs
}

func testHeader(n int) Header {
	return Header{BaseOffset: 0, PartitionLeaderEpoch: -1, LastOffsetDelta: int32(n - 1), BaseTimestamp: 1000,
		MaxTimestamp: 1000 + int64(3*(n-1)), ProducerID: 7, ProducerEpoch: 1, BaseSequence: 0}
}

func TestBuildParseAllCodecs(t *testing.T) {
	for _, c := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			recs := testRecords(10)
			b, err := Build(testHeader(10), recs, c)
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(b); err != nil {
				t.Fatal(err)
			}
			if b.Codec() != c || b.RecordCount() != 10 || b.LastOffset() != 9 || b.ProducerID() != 7 || b.Magic() != 2 {
				t.Fatalf("header %+v", b.Header())
			}
			i := 0
			err = b.ForEachRecord(true, func(r *Record) error {
				w := recs[i]
				if r.OffsetDelta != w.OffsetDelta || r.TimestampDelta != w.TimestampDelta || !bytes.Equal(r.Key, w.Key) ||
					!bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) || len(r.Headers) != len(w.Headers) {
					return fmt.Errorf("record %d: got %+v want %+v", i, r, w)
				}
				i++
				return nil
			})
			if err != nil || i != 10 {
				t.Fatalf("%v (%d records)", err, i)
			}
			// Recompress to every other codec and back keeps the records.
			for _, c2 := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
				nb, err := Recompress(b, c2)
				if err != nil {
					t.Fatal(err)
				}
				if err := Validate(nb); err != nil || nb.Codec() != c2 || nb.ProducerID() != 7 {
					t.Fatalf("recompress %s->%s: %v", c, c2, err)
				}
				if err := nb.ForEachRecord(false, nil); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestRawSnappyAccepted(t *testing.T) {
	var raw []byte
	for _, r := range testRecords(4) {
		raw = AppendRecord(raw, &r)
	}
	got, err := Decompress(Snappy, snappy.Encode(nil, raw))
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("raw snappy: %v", err)
	}
	x, _ := Compress(Snappy, raw)
	if !bytes.HasPrefix(x, xerialMagic) {
		t.Fatal("snappy output is not xerial framed")
	}
	got, err = Decompress(Snappy, x)
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("xerial: %v", err)
	}
}

func TestSettersAndCRC(t *testing.T) {
	b, _ := Build(testHeader(3), testRecords(3), None)
	crc := b.CRC()
	b.SetBaseOffset(12345)
	b.SetPartitionLeaderEpoch(9)
	if b.CRC() != crc || !b.ValidCRC() || b.BaseOffset() != 12345 || b.PartitionLeaderEpoch() != 9 || b.LastOffset() != 12347 {
		t.Fatal("baseOffset/epoch rewrite touched the CRC")
	}
	b.SetMaxTimestamp(false, b.MaxTimestamp())
	if b.CRC() != crc {
		t.Fatal("unchanged max timestamp rewrote the CRC")
	}
	b.SetMaxTimestamp(true, 99999)
	if !b.LogAppendTime() || b.MaxTimestamp() != 99999 || !b.ValidCRC() || b.CRC() == crc {
		t.Fatal("LogAppendTime rewrite")
	}
	// The known CRC-32C check value.
	if CRC32C([]byte("123456789")) != 0xe3069283 {
		t.Fatal("not Castagnoli")
	}
}

func TestValidateErrors(t *testing.T) {
	good, _ := Build(testHeader(3), testRecords(3), None)
	cp := func() Batch { return append(Batch(nil), good...) }
	badCRC := cp()
	badCRC[len(badCRC)-1] ^= 1
	badMagic := cp()
	badMagic[16] = 1
	badLen := cp()
	binary.BigEndian.PutUint32(badLen[8:], 10)
	for _, c := range []struct {
		name string
		b    Batch
		want error
	}{{"short", good[:40], ErrShort}, {"crc", badCRC, ErrBadCRC}, {"magic", badMagic, ErrBadMagic}, {"length", badLen, ErrBadLength}} {
		if err := Validate(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, _, err := Next(good[:50]); !errors.Is(err, ErrShort) {
		t.Errorf("Next short: %v", err)
	}
	// Record framing: count larger than the records present.
	over := cp()
	binary.BigEndian.PutUint32(over[57:], 4)
	if err := over.ForEachRecord(false, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("count overrun: %v", err)
	}
	under := cp()
	binary.BigEndian.PutUint32(under[57:], 2)
	if err := under.ForEachRecord(false, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing bytes: %v", err)
	}
	gz, _ := Build(testHeader(3), testRecords(3), Gzip)
	gz[HeaderSize+12] ^= 0xff
	if err := gz.ForEachRecord(false, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("corrupt gzip: %v", err)
	}
}

func TestParseRecordNoAllocWithoutHeaders(t *testing.T) {
	b, _ := Build(testHeader(10), testRecords(10), None)
	allocs := testing.AllocsPerRun(100, func() {
		_ = b.ForEachRecord(false, func(*Record) error { return nil })
	})
	if allocs > 1 {
		t.Fatalf("%v allocs iterating plain records", allocs)
	}
}

// TestRecordIter: the iterator sees what ForEachRecord sees, ends with the same errors,
// and walks a plain batch without allocating, whatever its record count.
func TestRecordIter(t *testing.T) {
	for _, c := range []Codec{None, Zstd} {
		b, _ := Build(testHeader(10), testRecords(10), c)
		it, err := b.Iter()
		if err != nil {
			t.Fatal(err)
		}
		want := testRecords(10)
		var r Record
		n := 0
		for it.Next(&r, true) {
			if w := want[n]; r.OffsetDelta != w.OffsetDelta || !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) || len(r.Headers) != len(w.Headers) {
				t.Fatalf("%s record %d: got %+v want %+v", c, n, r, w)
			}
			n++
		}
		if err := it.Err(); err != nil || n != 10 {
			t.Fatalf("%s: %v after %d records", c, err, n)
		}
		if it.Next(&r, true) {
			t.Fatalf("%s: Next after the end", c)
		}
	}

	plain, _ := Build(testHeader(4), testRecords(4), None)
	tests := []struct {
		name string
		edit func(Batch) Batch
		want int // records seen before the error
	}{
		{"count above records", func(b Batch) Batch { binary.BigEndian.PutUint32(b[offRecordCount:], 5); return b }, 4},
		{"count below records", func(b Batch) Batch { binary.BigEndian.PutUint32(b[offRecordCount:], 3); return b }, 3},
		{"negative count", func(b Batch) Batch { binary.BigEndian.PutUint32(b[offRecordCount:], 0xffffffff); return b }, 0},
		{"truncated record", func(b Batch) Batch { return b[:len(b)-3] }, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.edit(append(Batch(nil), plain...))
			it, err := b.Iter()
			if err != nil {
				t.Fatal(err)
			}
			var r Record
			n := 0
			for it.Next(&r, false) {
				n++
			}
			if !errors.Is(it.Err(), ErrCorrupt) || n != tt.want {
				t.Fatalf("err %v after %d records, want ErrCorrupt after %d", it.Err(), n, tt.want)
			}
			if err := b.ForEachRecord(false, nil); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ForEachRecord: %v", err)
			}
		})
	}

	big, _ := Build(testHeader(1000), testRecords(1000), None)
	allocs := testing.AllocsPerRun(50, func() {
		it, _ := big.Iter()
		var r Record
		for it.Next(&r, false) {
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs walking 1000 plain records", allocs)
	}
}

// BenchmarkRecordIter: walking a plain batch's records in place, as the append path does.
func BenchmarkRecordIter(b *testing.B) {
	for _, n := range []int{10, 1000} {
		batch, _ := Build(testHeader(n), testRecords(n), None)
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				it, _ := batch.Iter()
				var r Record
				for it.Next(&r, false) {
				}
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}

func FuzzValidate(f *testing.F) {
	for _, c := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		b, _ := Build(testHeader(3), testRecords(3), c)
		f.Add([]byte(b))
	}
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 49})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, rest, err := Next(data)
		if err != nil {
			return
		}
		if len(b)+len(rest) != len(data) {
			t.Fatal("Next lost bytes")
		}
		if err := Validate(b); err != nil {
			return
		}
		// A valid header: iterating records must not panic, and what parses re-encodes
		// to the same plain bytes.
		var plain []byte
		n := int32(0)
		err = b.ForEachRecord(true, func(r *Record) error {
			plain = AppendRecord(plain, r)
			n++
			return nil
		})
		if err != nil {
			return
		}
		if n != b.RecordCount() {
			t.Fatalf("%d records, count %d", n, b.RecordCount())
		}
		if b.Codec() == None && !bytes.Equal(plain, b.Records()) {
			// Non-minimal varints re-encode shorter; only equal lengths must match exactly.
			if len(plain) == len(b.Records()) {
				t.Fatal("re-encoded records differ")
			}
		}
	})
}

// TestReadVarintFastPaths: the one- and two-byte shortcuts agree with encoding/binary for
// every encoding of that length, including overlong ones.
func TestReadVarintFastPaths(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		want, wn := binary.Varint(b)
		got, n, err := readVarint(b)
		if err != nil || n != wn || int64(got) != want {
			t.Fatalf("readVarint(%x) = %d, %d, %v; want %d, %d", b, got, n, err, want, wn)
		}
		got64, n, err := readVarlong(b)
		if err != nil || n != wn || got64 != want {
			t.Fatalf("readVarlong(%x) = %d, %d, %v; want %d, %d", b, got64, n, err, want, wn)
		}
	}
	for b0 := 0; b0 < 256; b0++ {
		if b0 < 0x80 {
			check([]byte{byte(b0), 0xff})
			continue
		}
		for b1 := 0; b1 < 0x80; b1++ {
			check([]byte{byte(b0), byte(b1), 0xff})
		}
	}
	if _, _, err := readVarint([]byte{0x80}); err == nil {
		t.Fatal("truncated varint accepted")
	}
}
