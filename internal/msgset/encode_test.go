package msgset

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// decodedMessage is a message read back by the tests' own walker (kmsg's MessageV0/V1
// decode each message; wrappers are expanded here).
type decodedMessage struct {
	Offset     int64
	Magic      int8
	Attributes int8
	Timestamp  int64
	Key, Value []byte
}

// decodeSet walks the complete messages of a message set, expanding compressed wrappers to
// their inner messages with absolute offsets, checking every CRC. It returns the messages
// and the bytes left over (a partial message at the end).
func decodeSet(t *testing.T, b []byte) ([]decodedMessage, []byte) {
	t.Helper()
	var out []decodedMessage
	for len(b) >= LogOverhead {
		size := int(int32(binary.BigEndian.Uint32(b[8:])))
		if size < RecordOverheadV0 || LogOverhead+size > len(b) {
			break
		}
		msg := b[:LogOverhead+size]
		b = b[LogOverhead+size:]
		if got, want := binary.BigEndian.Uint32(msg[12:]), crc32.ChecksumIEEE(msg[16:]); got != want {
			t.Fatalf("message CRC %08x, computed %08x", got, want)
		}
		m := readOne(t, msg)
		codec := recordbatch.Codec(m.Attributes & AttrCodecMask)
		if codec == recordbatch.None {
			out = append(out, m)
			continue
		}
		if m.Key != nil {
			t.Fatalf("wrapper at %d has a key", m.Offset)
		}
		payload := m.Value
		if codec == recordbatch.LZ4 && m.Magic == MagicV0 {
			// Kafka's magic 0 LZ4 header checksum also covers the frame magic (KAFKA-3160);
			// check it, then fix it for a standard reader.
			payload = append([]byte(nil), payload...)
			if want := byte(lz4XXH32(payload[:6]) >> 8); payload[6] != want {
				t.Fatalf("magic 0 lz4 header checksum %02x, want the broken one %02x", payload[6], want)
			}
			payload[6] = byte(lz4XXH32(payload[4:6]) >> 8)
		}
		raw, err := recordbatch.Decompress(codec, payload)
		if err != nil {
			t.Fatalf("wrapper at %d: %v", m.Offset, err)
		}
		inner, rest := decodeSet(t, raw)
		if len(rest) != 0 || len(inner) == 0 {
			t.Fatalf("wrapper at %d: %d inner messages, %d bytes left", m.Offset, len(inner), len(rest))
		}
		last := inner[len(inner)-1].Offset
		for _, im := range inner {
			if im.Magic != m.Magic {
				t.Fatalf("inner magic %d in wrapper magic %d", im.Magic, m.Magic)
			}
			if m.Magic > MagicV0 { // relative inner offsets: the wrapper has the last one
				im.Offset = m.Offset - last + im.Offset
			}
			out = append(out, im)
		}
		if m.Magic == MagicV0 && last != m.Offset {
			t.Fatalf("magic 0 wrapper offset %d, last inner %d", m.Offset, last)
		}
	}
	return out, b
}

func readOne(t *testing.T, msg []byte) decodedMessage {
	t.Helper()
	switch msg[16] {
	case 0:
		var m kmsg.MessageV0
		if err := m.ReadFrom(msg); err != nil {
			t.Fatalf("kmsg MessageV0: %v", err)
		}
		return decodedMessage{m.Offset, m.Magic, m.Attributes, NoTimestamp, m.Key, m.Value}
	case 1:
		var m kmsg.MessageV1
		if err := m.ReadFrom(msg); err != nil {
			t.Fatalf("kmsg MessageV1: %v", err)
		}
		return decodedMessage{m.Offset, m.Magic, m.Attributes, m.Timestamp, m.Key, m.Value}
	}
	t.Fatalf("magic %d", msg[16])
	return decodedMessage{}
}

func TestAppendMessageBytes(t *testing.T) {
	// Magic 1, key "k", null value, by hand.
	want := []byte{
		0, 0, 0, 0, 0, 0, 0, 7, // offset
		0, 0, 0, 23, // size: 4+1+1+8+4+1+4
		0, 0, 0, 0, // crc, filled below
		1, 8, // magic, attributes (log append time)
		0, 0, 0, 0, 0, 0, 3, 0xe8, // timestamp 1000
		0, 0, 0, 1, 'k',
		0xff, 0xff, 0xff, 0xff,
	}
	binary.BigEndian.PutUint32(want[12:], crc32.ChecksumIEEE(want[16:]))
	if got := AppendMessage(nil, 7, MagicV1, AttrLogAppendTime, 1000, []byte("k"), nil); !bytes.Equal(got, want) {
		t.Fatalf("magic 1:\ngot  %x\nwant %x", got, want)
	}
	// Magic 0 has no timestamp; an empty (non-null) key stays empty.
	want = []byte{
		0, 0, 0, 0, 0, 0, 0, 9,
		0, 0, 0, 16,
		0, 0, 0, 0,
		0, 0,
		0, 0, 0, 0,
		0, 0, 0, 2, 'v', 'w',
	}
	binary.BigEndian.PutUint32(want[12:], crc32.ChecksumIEEE(want[16:]))
	if got := AppendMessage(nil, 9, MagicV0, 0, 12345, []byte{}, []byte("vw")); !bytes.Equal(got, want) {
		t.Fatalf("magic 0:\ngot  %x\nwant %x", got, want)
	}
}

func TestLZ4HeaderChecksum(t *testing.T) {
	// XXH32 vectors (seed 0) for the lengths a frame header uses.
	for _, v := range []struct {
		want uint32
		in   string
	}{{0x02cc5d05, ""}, {0x550d7456, "a"}, {0x4999fc53, "ab"}, {0x32d153ff, "abc"}, {0xa3643705, "abcd"},
		{0x9738f19b, "abcde"}, {0x8b7cd587, "abcdef"}, {0x9dd093b3, "abcdefg"}, {0x0bb3c6bb, "abcdefgh"},
		{0xd03c13fd, "abcdefghi"}, {0x8b988cfe, "abcdefghij"}} {
		if got := lz4XXH32([]byte(v.in)); got != v.want {
			t.Errorf("xxh32(%q) = %08x, want %08x", v.in, got, v.want)
		}
	}
	data := bytes.Repeat([]byte("kafka message set "), 10000) // several 64 KiB blocks
	v1, err := CompressLegacy(recordbatch.LZ4, MagicV1, data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v1[:7], []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82}) {
		t.Fatalf("magic 1 frame header % x", v1[:7])
	}
	got, err := recordbatch.Decompress(recordbatch.LZ4, v1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("magic 1 lz4 round trip: %v", err)
	}
	v0, err := CompressLegacy(recordbatch.LZ4, MagicV0, data)
	if err != nil {
		t.Fatal(err)
	}
	if v0[6] == v1[6] || v0[6] != byte(lz4XXH32(v0[:6])>>8) {
		t.Fatalf("magic 0 header checksum %02x", v0[6])
	}
	if _, err := recordbatch.Decompress(recordbatch.LZ4, v0); err == nil {
		t.Fatal("a standard LZ4 reader accepted the broken magic 0 checksum")
	}
	if !bytes.Equal(v0[7:], v1[7:]) {
		t.Fatal("magic 0 and 1 frames differ past the header")
	}
	// Incompressible data is stored raw.
	rnd := make([]byte, 1000)
	for i := range rnd {
		rnd[i] = byte(i*7919>>3) ^ byte(i*31)
	}
	raw, err := CompressLegacy(recordbatch.LZ4, MagicV1, rnd)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := recordbatch.Decompress(recordbatch.LZ4, raw); err != nil || !bytes.Equal(got, rnd) {
		t.Fatalf("raw block round trip: %v", err)
	}
	if _, err := CompressLegacy(recordbatch.Zstd, MagicV1, data); err != ErrEncodeZstd {
		t.Fatalf("zstd: %v", err)
	}
}

func TestBuilderCompressed(t *testing.T) {
	for _, codec := range []recordbatch.Codec{recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4} {
		for _, magic := range []int8{MagicV0, MagicV1} {
			b := NewBuilder([]byte("prefix"), magic, codec, false, 0, 100)
			b.Append(100, 5, []byte("a"), []byte("1"))
			b.Append(102, 9, nil, nil) // a gap (compaction) and a tombstone
			b.Append(103, 7, []byte("c"), []byte("3"))
			out, err := b.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(out, []byte("prefix")) {
				t.Fatal("dst not kept")
			}
			got, rest := decodeSet(t, out[6:])
			if len(rest) != 0 || len(got) != 3 {
				t.Fatalf("%s magic %d: %d messages, %d left", codec, magic, len(got), len(rest))
			}
			wrapper := readOne(t, out[6:])
			if wrapper.Offset != 103 || recordbatch.Codec(wrapper.Attributes) != codec {
				t.Fatalf("%s magic %d: wrapper offset %d attributes %d", codec, magic, wrapper.Offset, wrapper.Attributes)
			}
			if magic == MagicV1 && wrapper.Timestamp != 9 {
				t.Fatalf("wrapper timestamp %d, want the max 9", wrapper.Timestamp)
			}
			for i, w := range []decodedMessage{{100, magic, 0, 5, []byte("a"), []byte("1")},
				{102, magic, 0, 9, nil, nil}, {103, magic, 0, 7, []byte("c"), []byte("3")}} {
				if magic == MagicV0 {
					w.Timestamp = NoTimestamp
				}
				if !equalMessage(got[i], w) {
					t.Fatalf("%s magic %d message %d: %+v, want %+v", codec, magic, i, got[i], w)
				}
			}
			if magic == MagicV1 {
				// Relative inner offsets: 0, 2, 3.
				if rel := innerOffsets(t, out[6:], codec); !equalInt64s(rel, []int64{0, 2, 3}) {
					t.Fatalf("inner offsets %v", rel)
				}
			}
		}
	}
	// Log append time: every message and the wrapper carry it, with the attribute bit.
	b := NewBuilder(nil, MagicV1, recordbatch.Gzip, true, 4242, 0)
	b.Append(0, 1, nil, []byte("x"))
	b.Append(1, 2, nil, []byte("y"))
	out, err := b.Close()
	if err != nil {
		t.Fatal(err)
	}
	if w := readOne(t, out); w.Timestamp != 4242 || w.Attributes != int8(recordbatch.Gzip)|AttrLogAppendTime {
		t.Fatalf("wrapper %+v", w)
	}
	got, _ := decodeSet(t, out)
	for _, m := range got {
		if m.Timestamp != 4242 || m.Attributes != AttrLogAppendTime {
			t.Fatalf("inner %+v", m)
		}
	}
	// Nothing appended, nothing written.
	if out, err := NewBuilder([]byte("x"), MagicV1, recordbatch.Gzip, false, 0, 0).Close(); err != nil || string(out) != "x" {
		t.Fatalf("empty builder wrote %q, %v", out, err)
	}
}

func innerOffsets(t *testing.T, wrapper []byte, codec recordbatch.Codec) []int64 {
	raw, err := recordbatch.Decompress(codec, readOne(t, wrapper).Value)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for len(raw) > 0 {
		offs = append(offs, int64(binary.BigEndian.Uint64(raw)))
		raw = raw[LogOverhead+int(binary.BigEndian.Uint32(raw[8:])):]
	}
	return offs
}

func equalInt64s(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalMessage(a, b decodedMessage) bool {
	return a.Offset == b.Offset && a.Magic == b.Magic && a.Attributes == b.Attributes && a.Timestamp == b.Timestamp &&
		bytes.Equal(a.Key, b.Key) && (a.Key == nil) == (b.Key == nil) &&
		bytes.Equal(a.Value, b.Value) && (a.Value == nil) == (b.Value == nil)
}
