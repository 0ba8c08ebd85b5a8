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
