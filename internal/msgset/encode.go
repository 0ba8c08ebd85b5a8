package msgset

// encode.go writes legacy message sets, as Kafka's LegacyRecord.write and MemoryRecordsBuilder
// do for magic 0 and 1: plain messages one after another, or one compressed wrapper holding
// the inner messages (relative inner offsets in magic 1, absolute in magic 0; the wrapper
// carries the last offset and, in magic 1, the max or log-append timestamp).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"slices"

	"github.com/pierrec/lz4/v4"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// ErrEncodeZstd: zstd cannot be written in magic 0 or 1 (Kafka's UnsupportedCompressionTypeException).
var ErrEncodeZstd = errors.New("msgset: zstd is not supported by message format v0/v1")

// RecordSize is LegacyRecord.recordSize: a message's bytes after its offset and size prefix.
func RecordSize(magic int8, keyLen, valueLen int) int {
	n := RecordOverheadV0
	if magic > MagicV0 {
		n = RecordOverheadV1
	}
	return n + max(keyLen, 0) + max(valueLen, 0)
}

// AppendMessage appends one message, offset and size prefix included, with the IEEE CRC of
// everything after the CRC field. A nil key or value is written as null (-1).
func AppendMessage(dst []byte, offset int64, magic, attributes int8, timestamp int64, key, value []byte) []byte {
	size := RecordSize(magic, len(key), len(value))
	dst = binary.BigEndian.AppendUint64(dst, uint64(offset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	crcAt := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(magic), byte(attributes))
	if magic > MagicV0 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(timestamp))
	}
	dst = appendLegacyBytes(dst, key)
	dst = appendLegacyBytes(dst, value)
	binary.BigEndian.PutUint32(dst[crcAt:], crc32.ChecksumIEEE(dst[crcAt+4:]))
	return dst
}

func appendLegacyBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.BigEndian.AppendUint32(dst, 0xffffffff)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// Builder writes one message set in magic 0 or 1 (MemoryRecordsBuilder for legacy magic):
// Append the messages in offset order, then Close.
type Builder struct {
	magic         int8
	codec         recordbatch.Codec
	logAppendTime bool
	appendTime    int64
	baseOffset    int64

	dst   []byte
	inner []byte // compressed: the inner messages, compressed into the wrapper at Close

	n            int
	lastOffset   int64
	maxTimestamp int64
	uncompressed int // bytes of messages written, offset and size prefixes included
}

// NewBuilder starts a message set appended to dst. With logAppendTime (magic 1) every
// message and the wrapper carry appendTime and the timestamp-type bit; baseOffset is the
// first message's offset, from which magic 1 inner offsets are counted.
func NewBuilder(dst []byte, magic int8, codec recordbatch.Codec, logAppendTime bool, appendTime, baseOffset int64) *Builder {
	return &Builder{magic: magic, codec: codec, logAppendTime: logAppendTime && magic > MagicV0,
		appendTime: appendTime, baseOffset: baseOffset, dst: dst, maxTimestamp: NoTimestamp}
}

// attributes is LegacyRecord.computeAttributes.
func (b *Builder) attributes(codec recordbatch.Codec) int8 {
	a := int8(codec) & AttrCodecMask
	if b.logAppendTime {
		a |= AttrLogAppendTime
	}
	return a
}

// Append adds a message (appendLegacyRecord). Headers have no place in magic 0/1.
func (b *Builder) Append(offset, timestamp int64, key, value []byte) {
	if b.logAppendTime {
		timestamp = b.appendTime
	}
	if b.magic == MagicV0 {
		timestamp = NoTimestamp
	}
	if b.codec == recordbatch.None {
		b.dst = AppendMessage(b.dst, offset, b.magic, b.attributes(recordbatch.None), timestamp, key, value)
	} else {
		inner := offset
		if b.magic > MagicV0 {
			inner = offset - b.baseOffset
		}
		b.inner = AppendMessage(b.inner, inner, b.magic, b.attributes(recordbatch.None), timestamp, key, value)
	}
	b.n++
	b.uncompressed += LogOverhead + RecordSize(b.magic, len(key), len(value))
	b.lastOffset = offset
	if b.magic > MagicV0 && timestamp > b.maxTimestamp {
		b.maxTimestamp = timestamp
	}
}

// Grow makes room for n more bytes of messages, to spare the appends reallocating.
func (b *Builder) Grow(n int) {
	if b.codec == recordbatch.None {
		b.dst = slices.Grow(b.dst, n)
	} else {
		b.inner = slices.Grow(b.inner, n)
	}
}

// Messages is the number of messages appended.
func (b *Builder) Messages() int { return b.n }

// UncompressedBytes is MemoryRecordsBuilder.uncompressedBytesWritten: the messages' bytes
// plus, when compressed, the wrapper's overhead.
func (b *Builder) UncompressedBytes() int {
	if b.codec == recordbatch.None {
		return b.uncompressed
	}
	return b.uncompressed + LogOverhead + RecordSize(b.magic, 0, 0)
}

// Close returns dst with the message set appended; a compressed set becomes one wrapper
// message. A set without messages adds nothing.
func (b *Builder) Close() ([]byte, error) {
	if b.codec == recordbatch.None || b.n == 0 {
		return b.dst, nil
	}
	payload, err := CompressLegacy(b.codec, b.magic, b.inner)
	if err != nil {
		return b.dst, err
	}
	ts := b.maxTimestamp
	if b.logAppendTime {
		ts = b.appendTime
	}
	return AppendMessage(b.dst, b.lastOffset, b.magic, b.attributes(b.codec), ts, nil, payload), nil
}

// CompressLegacy compresses the inner messages of a magic 0/1 wrapper as Kafka's
// CompressionType.wrapForOutput does for that magic: gzip, snappy in xerial framing, and
// LZ4 frames from KafkaLZ4BlockOutputStream, whose magic 0 header checksum is computed
// over the frame magic too (KAFKA-3160), as 0.8/0.9 clients expect.
func CompressLegacy(codec recordbatch.Codec, magic int8, data []byte) ([]byte, error) {
	switch codec {
	case recordbatch.Zstd:
		return nil, ErrEncodeZstd
	case recordbatch.LZ4:
		return appendKafkaLZ4Frame(nil, data, magic == MagicV0)
	}
	out, err := recordbatch.Compress(codec, data)
	if err != nil {
		return nil, fmt.Errorf("msgset: compress %s: %w", codec, err)
	}
	return out, nil
}

// LZ4 frame constants of KafkaLZ4BlockOutputStream: version 1, independent blocks, no
// block or content checksum, no content size, 64 KiB blocks.
const (
	lz4FrameMagic   = 0x184D2204
	lz4FLG          = 0x60 // version 01, block independence
	lz4BD           = 0x40 // block max size 64 KiB
	lz4BlockSize    = 64 << 10
	lz4Uncompressed = 0x80000000
)

// appendKafkaLZ4Frame appends data as one LZ4 frame laid out as KafkaLZ4BlockOutputStream
// writes it. brokenHC computes the header checksum over the frame magic as well as the
// descriptor, as Kafka does for magic 0.
func appendKafkaLZ4Frame(dst, data []byte, brokenHC bool) ([]byte, error) {
	hdr := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, lz4FrameMagic)
	dst = append(dst, lz4FLG, lz4BD)
	from := hdr + 4
	if brokenHC {
		from = hdr
	}
	dst = append(dst, byte(lz4XXH32(dst[from:])>>8))
	var comp []byte
	for len(data) > 0 {
		block := data[:min(len(data), lz4BlockSize)]
		data = data[len(block):]
		if need := lz4.CompressBlockBound(len(block)); cap(comp) < need {
			comp = make([]byte, need)
		}
		n, err := lz4.CompressBlock(block, comp[:cap(comp)], nil)
		if err != nil {
			return nil, fmt.Errorf("msgset: lz4: %w", err)
		}
		if n == 0 || n >= len(block) { // incompressible: stored as is
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(block))|lz4Uncompressed)
			dst = append(dst, block...)
			continue
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
		dst = append(dst, comp[:n]...)
	}
	return append(dst, 0, 0, 0, 0), nil // end mark
}

// lz4XXH32 is XXH32 with seed 0 for the short inputs of an LZ4 frame header (< 16 bytes).
func lz4XXH32(b []byte) uint32 {
	const (
		p1 = 2654435761
		p3 = 3266489917
		p4 = 668265263
		p5 = 374761393
	)
	h := uint32(p5) + uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * p3
		h = bits.RotateLeft32(h, 17) * p4
	}
	for _, c := range b {
		h += uint32(c) * p5
		h = bits.RotateLeft32(h, 11) * p1
	}
	h ^= h >> 15
	h *= 2246822519
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}
