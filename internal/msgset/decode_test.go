package msgset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// encMsg encodes one message set entry by hand, following the wire layout in msgset.go.
func encMsg(offset int64, magic, attr int8, ts int64, key, value []byte) []byte {
	var body []byte
	body = append(body, byte(magic), byte(attr))
	if magic >= MagicV1 {
		body = binary.BigEndian.AppendUint64(body, uint64(ts))
	}
	body = appendBytes(body, key)
	body = appendBytes(body, value)
	out := binary.BigEndian.AppendUint64(nil, uint64(offset))
	out = binary.BigEndian.AppendUint32(out, uint32(4+len(body)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
	return append(out, body...)
}

func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.BigEndian.AppendUint32(b, 0xffffffff)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// compressFor compresses a test payload; "snappy-raw" is a bare snappy block (what some
// old clients send), "snappy" xerial framing, "lz4-broken" a frame whose descriptor
// checksum also covers the magic bytes, as Kafka 0.8-0.9 wrote it (KAFKA-3160).
func compressFor(t testing.TB, codec string, data []byte) []byte {
	t.Helper()
	switch codec {
	case "gzip":
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(data)
		w.Close()
		return buf.Bytes()
	case "snappy":
		out, err := recordbatch.Compress(recordbatch.Snappy, data)
		if err != nil {
			t.Fatal(err)
		}
		return out
	case "snappy-raw":
		return snappy.Encode(nil, data)
	case "lz4", "lz4-broken":
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		w.Write(data)
		w.Close()
		out := buf.Bytes()
		if codec == "lz4-broken" {
			end := 6
			if out[4]&lz4FlagSize != 0 {
				end += 8
			}
			out[end] = byte(xxh32(out[:end], 0) >> 8)
		}
		return out
	}
	t.Fatalf("codec %s", codec)
	return nil
}

var codecIDs = map[string]int8{"gzip": CodecGzip, "snappy": CodecSnappy, "snappy-raw": CodecSnappy, "lz4": CodecLZ4, "lz4-broken": CodecLZ4}

func wrapper(t testing.TB, offset int64, magic int8, codec string, ts int64, lat bool, inner []byte) []byte {
	attr := codecIDs[codec]
	if lat {
		attr |= AttrLogAppendTime
	}
	return encMsg(offset, magic, attr, ts, nil, compressFor(t, codec, inner))
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func sameMessages(t *testing.T, got, want []Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != w.Offset || g.Magic != w.Magic || g.Timestamp != w.Timestamp || g.Codec() != w.Codec() ||
			!bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) {
			t.Fatalf("message %d: got %+v, want %+v", i, g, w)
		}
	}
}

func TestDecodeUncompressed(t *testing.T) {
	for _, magic := range []int8{MagicV0, MagicV1} {
		ts := func(v int64) int64 {
			if magic == MagicV0 {
				return NoTimestamp
			}
			return v
		}
		set := cat(
			encMsg(0, magic, 0, 1000, []byte("k0"), []byte("v0")),
			encMsg(1, magic, 0, 1001, nil, []byte("v1")),
			encMsg(2, magic, 0, 999, []byte("k2"), nil),
			encMsg(3, magic, 0, 1002, []byte{}, []byte{}),
		)
		got, err := Decode(set)
		if err != nil {
			t.Fatalf("magic %d: %v", magic, err)
		}
		sameMessages(t, got, []Message{
			{Offset: 0, Magic: magic, Timestamp: ts(1000), Key: []byte("k0"), Value: []byte("v0")},
			{Offset: 1, Magic: magic, Timestamp: ts(1001), Value: []byte("v1")},
			{Offset: 2, Magic: magic, Timestamp: ts(999), Key: []byte("k2")},
			{Offset: 3, Magic: magic, Timestamp: ts(1002), Key: []byte{}, Value: []byte{}},
		})
		// A trailing partial entry is dropped, as Kafka's batch iterator drops it.
		got, err = Decode(cat(set, encMsg(4, magic, 0, 1, nil, []byte("partial"))[:20]))
		if err != nil || len(got) != 4 {
			t.Fatalf("magic %d with a partial tail: %d messages, %v", magic, len(got), err)
		}
	}
}

func TestDecodeCompressed(t *testing.T) {
	for _, codec := range []string{"gzip", "snappy", "snappy-raw", "lz4", "lz4-broken"} {
		for _, magic := range []int8{MagicV0, MagicV1} {
			if codec == "lz4-broken" && magic == MagicV1 {
				continue // refused: see TestDecodeErrors
			}
			t.Run(codec, func(t *testing.T) {
				// Magic 0 inner offsets are absolute; magic 1 inner offsets are relative and the
				// wrapper carries the last absolute offset.
				innerOff := func(i int64) int64 {
					if magic == MagicV0 {
						return 40 + i
					}
					return i
				}
				inner := cat(
					encMsg(innerOff(0), magic, 0, 500, []byte("a"), []byte("1")),
					encMsg(innerOff(1), magic, 0, 501, nil, []byte("2")),
					encMsg(innerOff(2), magic, 0, 502, []byte("c"), nil),
				)
				got, err := Decode(wrapper(t, 42, magic, codec, 502, false, inner))
				if err != nil {
					t.Fatal(err)
				}
				ts := func(v int64) int64 {
					if magic == MagicV0 {
						return NoTimestamp
					}
					return v
				}
				sameMessages(t, got, []Message{
					{Offset: 40, Magic: magic, Timestamp: ts(500), Key: []byte("a"), Value: []byte("1")},
					{Offset: 41, Magic: magic, Timestamp: ts(501), Value: []byte("2")},
					{Offset: 42, Magic: magic, Timestamp: ts(502), Key: []byte("c")},
				})
			})
		}
	}
}

func TestDecodeMagic1WrapperOffsets(t *testing.T) {
	inner := cat(encMsg(0, 1, 0, 7, nil, []byte("x")), encMsg(1, 1, 0, 8, nil, []byte("y")))
	// A wrapper offset of 0 (librdkafka) keeps the relative offsets.
	got, err := Decode(wrapper(t, 0, 1, "gzip", 8, false, inner))
	if err != nil || len(got) != 2 || got[0].Offset != 0 || got[1].Offset != 1 {
		t.Fatalf("wrapper offset 0: %+v, %v", got, err)
	}
	// A LogAppendTime wrapper gives its timestamp to every inner message.
	w := wrapper(t, 9, 1, "gzip", 12345, true, inner)
	got, err = Decode(w)
	if err != nil || len(got) != 2 || got[0].Timestamp != 12345 || got[1].Timestamp != 12345 || got[0].Offset != 8 {
		t.Fatalf("LogAppendTime wrapper: %+v, %v", got, err)
	}
	es, err := Entries(w)
	if err != nil || len(es) != 1 || !es[0].LogAppendTime() {
		t.Fatalf("entries %+v, %v", es, err)
	}
	deep, err := es[0].Deep()
	if err != nil || !deep[0].LogAppendTime() {
		t.Fatalf("deep: %+v, %v", deep, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := encMsg(0, 1, 0, 1, []byte("k"), []byte("v"))
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 0xff
	tooSmall := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, 0), 13)
	tooSmall = append(tooSmall, make([]byte, 13)...)
	badMagic := append([]byte(nil), good...)
	badMagic[magicOffset] = 3
	// A key length beyond the message, with a CRC that matches.
	overrun := encMsg(0, 0, 0, 0, []byte("key"), []byte("v"))
	binary.BigEndian.PutUint32(overrun[keyOffsetV0:], 100)
	binary.BigEndian.PutUint32(overrun[crcOffset:], crc32.ChecksumIEEE(overrun[crcFrom:]))
	nested := wrapper(t, 0, 1, "gzip", 0, false, wrapper(t, 0, 1, "gzip", 0, false, good))
	mixed := wrapper(t, 0, 1, "gzip", 0, false, encMsg(0, 0, 0, 0, nil, []byte("v0")))
	zstdWrapper := encMsg(0, 1, CodecZstd, 0, nil, []byte("whatever"))
	nullWrapper := encMsg(0, 1, CodecGzip, 0, nil, nil)
	emptyWrapper := wrapper(t, 0, 1, "gzip", 0, false, nil)
	lowWrapper := wrapper(t, 1, 1, "gzip", 0, false, cat(encMsg(0, 1, 0, 0, nil, nil), encMsg(1, 1, 0, 0, nil, nil), encMsg(2, 1, 0, 0, nil, nil)))
	innerBadCRC := append([]byte(nil), good...)
	innerBadCRC[len(innerBadCRC)-1] ^= 0xff
	innerCorrupt := wrapper(t, 0, 1, "gzip", 0, false, innerBadCRC)
	innerTooSmall := wrapper(t, 0, 1, "gzip", 0, false, tooSmall)
	garbage := encMsg(0, 1, CodecGzip, 0, nil, []byte("not gzip"))
	brokenLZ4V1 := wrapper(t, 0, 1, "lz4-broken", 0, false, good)

	for _, c := range []struct {
		name string
		set  []byte
		want error
	}{
		{"crc", badCRC, ErrCorrupt},
		{"size below overhead", tooSmall, ErrCorrupt},
		{"magic 3", badMagic, ErrCorrupt},
		{"key overruns", overrun, ErrCorrupt},
		{"nested wrapper", nested, ErrInvalid},
		{"inner magic differs", mixed, ErrInvalid},
		{"zstd wrapper", zstdWrapper, ErrInvalid},
		{"null wrapper value", nullWrapper, ErrInvalid},
		{"empty wrapper", emptyWrapper, ErrInvalid},
		{"wrapper offset below last inner", lowWrapper, ErrInvalid},
		{"inner crc", innerCorrupt, ErrCorrupt},
		{"inner size below overhead", innerTooSmall, ErrCorrupt},
		{"undecompressable", garbage, ErrCorrupt},
		{"magic 1 lz4 with the old header checksum", brokenLZ4V1, ErrCorrupt},
	} {
		if _, err := Decode(c.set); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestXXH32(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint32
	}{
		{"", 0x02CC5D05},
		{"a", 0x550D7456},
		{"abc", 0x32D153FF},
		{"Nobody inspects the spammish repetition", 0xE2293B2F},
	} {
		if got := xxh32([]byte(c.in), 0); got != c.want {
			t.Errorf("xxh32(%q) = %#x, want %#x", c.in, got, c.want)
		}
	}
	// A frame from the lz4 library already has the right checksum: nothing to fix.
	frame := compressFor(t, "lz4", []byte("hello hello hello"))
	if fixed := fixLZ4HeaderChecksum(frame); &fixed[0] != &frame[0] {
		t.Fatal("a correct descriptor checksum was rewritten")
	}
}
