package msgset

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// readBatch decodes b with kmsg (an implementation independent of recordbatch's reader).
func readBatch(t *testing.T, b []byte) (kmsg.RecordBatch, []kmsg.Record) {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg: %v", err)
	}
	data := rb.Records
	if c := recordbatch.Codec(rb.Attributes & 7); c != recordbatch.None {
		var err error
		if data, err = recordbatch.Decompress(c, data); err != nil {
			t.Fatal(err)
		}
	}
	var recs []kmsg.Record
	for len(data) > 0 {
		l, n := binary.Varint(data)
		if n <= 0 || int(l)+n > len(data) {
			t.Fatalf("bad record length at %d", len(recs))
		}
		var r kmsg.Record
		if err := r.ReadFrom(data[:n+int(l)]); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
		data = data[n+int(l):]
	}
	return rb, recs
}

func TestToBatch(t *testing.T) {
	cases := []struct {
		name string
		msgs []Message
	}{
		{"magic 1", []Message{
			{Magic: 1, Timestamp: 2000, Key: []byte("a"), Value: []byte("1")},
			{Magic: 1, Timestamp: 1990, Value: []byte("2")},
			{Magic: 1, Timestamp: 2010, Key: []byte("c")},
		}},
		{"magic 0", []Message{
			{Magic: 0, Timestamp: NoTimestamp, Key: []byte("a"), Value: []byte("1")},
			{Magic: 0, Timestamp: NoTimestamp, Key: []byte{}, Value: []byte{}},
		}},
	}
	for _, c := range cases {
		for _, codec := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd} {
			b, err := ToBatch(c.msgs, codec)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, codec, err)
			}
			if err := recordbatch.Validate(b); err != nil {
				t.Fatalf("%s %s: %v", c.name, codec, err)
			}
			rb, recs := readBatch(t, b)
			wantMax := NoTimestamp
			for _, m := range c.msgs {
				wantMax = max(wantMax, m.Timestamp)
			}
			if rb.FirstOffset != 0 || rb.Magic != 2 || rb.ProducerID != -1 || rb.ProducerEpoch != -1 || rb.FirstSequence != -1 ||
				rb.PartitionLeaderEpoch != -1 || rb.Attributes != int16(codec) || rb.NumRecords != int32(len(c.msgs)) ||
				rb.LastOffsetDelta != int32(len(c.msgs)-1) || rb.FirstTimestamp != c.msgs[0].Timestamp || rb.MaxTimestamp != wantMax {
				t.Fatalf("%s %s: header %+v", c.name, codec, rb)
			}
			for i, r := range recs {
				m := c.msgs[i]
				if r.OffsetDelta != int32(i) || rb.FirstTimestamp+r.TimestampDelta64 != m.Timestamp ||
					!bytes.Equal(r.Key, m.Key) || (r.Key == nil) != (m.Key == nil) ||
					!bytes.Equal(r.Value, m.Value) || (r.Value == nil) != (m.Value == nil) || len(r.Headers) != 0 {
					t.Fatalf("%s %s: record %d = %+v, want %+v", c.name, codec, i, r, m)
				}
			}
		}
	}
	if _, err := ToBatch(nil, recordbatch.None); err == nil {
		t.Fatal("an empty conversion succeeded")
	}
}

// TestDecodeToBatchRoundTrip takes a compressed magic 1 set through Decode and ToBatch.
func TestDecodeToBatchRoundTrip(t *testing.T) {
	inner := cat(encMsg(0, 1, 0, 100, []byte("k"), []byte("v")), encMsg(1, 1, 0, 101, nil, []byte("w")))
	msgs, err := Decode(wrapper(t, 1, 1, "snappy", 101, false, inner))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ToBatch(msgs, recordbatch.Gzip)
	if err != nil {
		t.Fatal(err)
	}
	rb, recs := readBatch(t, b)
	if len(recs) != 2 || rb.FirstTimestamp != 100 || recs[1].TimestampDelta64 != 1 || string(recs[0].Key) != "k" || recs[1].Key != nil || string(recs[1].Value) != "w" {
		t.Fatalf("batch %+v records %+v", rb, recs)
	}
}

// TestBuilderDecodeRoundTrip: what the down-conversion builder (encode.go) writes, in each
// magic and codec (magic 0 LZ4 with Kafka's old header checksum), decodes to the same
// messages and converts back to a batch holding them.
func TestBuilderDecodeRoundTrip(t *testing.T) {
	for _, magic := range []int8{MagicV0, MagicV1} {
		for _, codec := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4} {
			b := NewBuilder(nil, magic, codec, false, 0, 100)
			var want []Message
			for i := int64(0); i < 50; i++ {
				key := []byte{byte(i)}
				if i%7 == 0 {
					key = nil
				}
				ts := 1000 + i
				if magic == MagicV0 {
					ts = NoTimestamp
				}
				b.Append(100+i, ts, key, bytes.Repeat([]byte{'v'}, int(i)))
				want = append(want, Message{Offset: 100 + i, Magic: magic, Timestamp: ts, Key: key, Value: bytes.Repeat([]byte{'v'}, int(i))})
			}
			set, err := b.Close()
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(set)
			if err != nil {
				t.Fatalf("magic %d %s: %v", magic, codec, err)
			}
			sameMessages(t, got, want)
			batch, err := ToBatch(got, codec)
			if err != nil {
				t.Fatal(err)
			}
			if _, recs := readBatch(t, batch); len(recs) != len(want) {
				t.Fatalf("magic %d %s: %d records", magic, codec, len(recs))
			}
		}
	}
}

// BenchmarkUpConvert: one Produce v2 wrapper of 100 gzip messages decoded and rebuilt as a
// gzip batch, the work the broker adds for an old producer.
func BenchmarkUpConvert(b *testing.B) {
	bl := NewBuilder(nil, MagicV1, recordbatch.Gzip, false, 0, 0)
	for i := int64(0); i < 100; i++ {
		bl.Append(i, 1000+i, []byte("key"), bytes.Repeat([]byte{'x'}, 100))
	}
	set, err := bl.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(set)))
	b.ReportAllocs()
	for b.Loop() {
		msgs, err := Decode(set)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ToBatch(msgs, recordbatch.Gzip); err != nil {
			b.Fatal(err)
		}
	}
}
