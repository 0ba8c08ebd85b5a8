package msgset

// decode.go reads legacy message sets the way Kafka's broker does: ByteBufferLogInputStream
// splits a set into shallow entries, LegacyRecord reads one message, and
// AbstractLegacyRecordBatch's DeepRecordsIterator opens a compressed wrapper. The checks
// are split the same way so that a caller (the broker's Produce v0-v2 path, mirroring
// UnifiedLog.analyzeAndValidateRecords and LogValidator) can run them in Kafka's order.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/pierrec/lz4/v4"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// Errors of decoding. The broker maps ErrCorrupt to CORRUPT_MESSAGE (Kafka's
// CorruptRecordException) and ErrInvalid to INVALID_RECORD (InvalidRecordException).
var (
	ErrCorrupt = errors.New("msgset: corrupt message")
	ErrInvalid = errors.New("msgset: invalid record")
)

// Codec values of a legacy message's attributes (the same ids as record batches).
const (
	CodecNone   int8 = 0
	CodecGzip   int8 = 1
	CodecSnappy int8 = 2
	CodecLZ4    int8 = 3
	CodecZstd   int8 = 4 // never legal in a legacy message set
)

// Offsets inside a message set entry.
const (
	sizeOffset  = 8               // offset int64, then message_size int32
	magicOffset = LogOverhead + 4 // after the crc
	attrOffset  = magicOffset + 1 // attributes int8
	tsOffset    = attrOffset + 1  // magic 1 timestamp int64
	headerUpTo  = magicOffset + 1 // Records.HEADER_SIZE_UP_TO_MAGIC
	keyOffsetV0 = attrOffset + 1  // magic 0 key length
	keyOffsetV1 = keyOffsetV0 + 8 // magic 1 key length
	crcOffset   = LogOverhead     // crc uint32
	crcFrom     = LogOverhead + 4 // the CRC covers magic..end
	lz4Magic    = uint32(0x184D2204)
	lz4FlagSize = 0x08 // FLG bit: content size present
	lz4FlagDict = 0x01 // FLG bit: dictionary id present
)

// Entry is one entry of a message set as it lies in the buffer: a magic 0/1 message
// (LegacyRecord with its offset) or, for magic 2, a whole record batch. Entries returned by
// Deep for magic 1 inner messages carry their wrapper's timestamp and timestamp type, as
// LegacyRecord(buffer, wrapperRecordTimestamp, wrapperRecordTimestampType) does.
type Entry struct {
	Offset int64
	// Raw is the entry including its offset and size fields.
	Raw []byte

	wrapped    bool // a magic 1 inner message: wrapperTs/wrapperLAT apply
	wrapperTs  int64
	wrapperLAT bool
}

// Size is the entry's size in bytes including the log overhead (RecordBatch.sizeInBytes).
func (e *Entry) Size() int { return len(e.Raw) }

// Magic is the entry's magic byte.
func (e *Entry) Magic() int8 { return int8(e.Raw[magicOffset]) }

// Attributes is a legacy message's attributes byte.
func (e *Entry) Attributes() int8 {
	if len(e.Raw) <= attrOffset {
		return 0
	}
	return int8(e.Raw[attrOffset])
}

// Codec is a legacy message's compression codec.
func (e *Entry) Codec() int8 { return e.Attributes() & AttrCodecMask }

// StoredCRC is the CRC field of a legacy message.
func (e *Entry) StoredCRC() uint32 { return binary.BigEndian.Uint32(e.Raw[crcOffset:]) }

// ComputeCRC is the IEEE CRC-32 of a legacy message from its magic byte to its end.
func (e *Entry) ComputeCRC() uint32 { return crc32.ChecksumIEEE(e.Raw[crcFrom:]) }

// ValidCRC is LegacyRecord.isValid for magic 0/1 and DefaultRecordBatch.isValid for
// magic 2.
func (e *Entry) ValidCRC() bool {
	if e.Magic() >= 2 {
		b := recordbatch.Batch(e.Raw)
		return len(e.Raw) >= recordbatch.HeaderSize && b.ValidCRC()
	}
	return len(e.Raw) >= LogOverhead+RecordOverheadV0 && e.StoredCRC() == e.ComputeCRC()
}

// LogAppendTime is the entry's timestamp type (LegacyRecord.timestampType): for an inner
// magic 1 message, its wrapper's.
func (e *Entry) LogAppendTime() bool {
	if e.Magic() == MagicV0 {
		return false
	}
	if e.wrapped {
		return e.wrapperLAT
	}
	return e.Attributes()&AttrLogAppendTime != 0
}

// Message parses a legacy entry's fields. The timestamp is LegacyRecord.timestamp():
// NoTimestamp for magic 0, the wrapper's for an inner message of a LogAppendTime wrapper.
func (e *Entry) Message() (Message, error) {
	m := Message{Offset: e.Offset, Magic: e.Magic(), Attributes: e.Attributes(), Timestamp: NoTimestamp}
	pos := keyOffsetV0
	if m.Magic != MagicV0 {
		if len(e.Raw) < keyOffsetV1 {
			return Message{}, fmt.Errorf("%w: message of %d bytes has no room for a timestamp", ErrCorrupt, len(e.Raw))
		}
		m.Timestamp = int64(binary.BigEndian.Uint64(e.Raw[tsOffset:]))
		if e.wrapped && e.wrapperLAT {
			m.Timestamp = e.wrapperTs
		}
		pos = keyOffsetV1
	}
	var err error
	if m.Key, pos, err = sizeDelimited(e.Raw, pos, "key"); err != nil {
		return Message{}, err
	}
	if m.Value, _, err = sizeDelimited(e.Raw, pos, "value"); err != nil {
		return Message{}, err
	}
	return m, nil
}

// sizeDelimited reads an int32-length-prefixed byte string at pos (-1 = null), as
// Utils.sizeDelimited.
func sizeDelimited(b []byte, pos int, what string) ([]byte, int, error) {
	if len(b)-pos < 4 {
		return nil, 0, fmt.Errorf("%w: no room for the %s length", ErrCorrupt, what)
	}
	n := int32(binary.BigEndian.Uint32(b[pos:]))
	pos += 4
	if n < 0 {
		return nil, pos, nil
	}
	if int64(n) > int64(len(b)-pos) {
		return nil, 0, fmt.Errorf("%w: %s of %d bytes overruns the message (%d left)", ErrCorrupt, what, n, len(b)-pos)
	}
	return b[pos : pos+int(n) : pos+int(n)], pos + int(n), nil
}

// Entries splits a message set into its shallow entries as ByteBufferLogInputStream does:
// a size below the smallest legacy message or a magic outside 0..2 is corrupt; a trailing
// partial entry is dropped. Magic 2 entries (record batches) are returned as they are; the
// caller decides whether they may be mixed in.
func Entries(buf []byte) ([]Entry, error) {
	var out []Entry
	for rest := buf; len(rest) >= LogOverhead; {
		size := int32(binary.BigEndian.Uint32(rest[sizeOffset:]))
		if size < RecordOverheadV0 {
			return nil, fmt.Errorf("%w: record size %d is less than the minimum record overhead (%d)", ErrCorrupt, size, RecordOverheadV0)
		}
		if len(rest) < headerUpTo {
			break
		}
		if m := int8(rest[magicOffset]); m < 0 || m > 2 {
			return nil, fmt.Errorf("%w: invalid magic found in record: %d", ErrCorrupt, m)
		}
		n := int64(LogOverhead) + int64(size)
		if int64(len(rest)) < n {
			break
		}
		out = append(out, Entry{Offset: int64(binary.BigEndian.Uint64(rest)), Raw: rest[:n:n]})
		rest = rest[n:]
	}
	return out, nil
}

// Deep opens a compressed wrapper and returns its inner messages with absolute offsets
// (AbstractLegacyRecordBatch.DeepRecordsIterator). It refuses a zstd or null-valued wrapper,
// an inner message smaller than the minimum, an empty inner set and (magic 1) a wrapper
// offset below the last relative inner offset (unless 0, which some librdkafka versions
// send). A trailing partial inner message is dropped. Inner magic, CRC and compression are
// not checked here: the caller checks them message by message (LogValidator.validateRecord
// and the iterator's "Inner messages must not be compressed"), in order.
func (e *Entry) Deep() ([]Entry, error) {
	wrapperMagic := e.Magic()
	if wrapperMagic != MagicV0 && wrapperMagic != MagicV1 {
		return nil, fmt.Errorf("%w: invalid wrapper magic found in legacy deep record iterator %d", ErrInvalid, wrapperMagic)
	}
	codec := e.Codec()
	if codec == CodecZstd {
		return nil, fmt.Errorf("%w: invalid wrapper compressionType found in legacy deep record iterator %d", ErrInvalid, wrapperMagic)
	}
	w, err := e.Message()
	if err != nil {
		return nil, err
	}
	if w.Value == nil {
		return nil, fmt.Errorf("%w: found invalid compressed record set with null value (magic = %d)", ErrInvalid, wrapperMagic)
	}
	data, err := decompress(codec, wrapperMagic, w.Value)
	if err != nil {
		return nil, err
	}
	var inner []Entry
	for rest := data; len(rest) >= LogOverhead; {
		size := int32(binary.BigEndian.Uint32(rest[sizeOffset:]))
		if size < RecordOverheadV0 {
			return nil, fmt.Errorf("%w: record size is less than the minimum record overhead (%d)", ErrCorrupt, RecordOverheadV0)
		}
		n := int64(LogOverhead) + int64(size)
		if int64(len(rest)) < n {
			break
		}
		ie := Entry{Offset: int64(binary.BigEndian.Uint64(rest)), Raw: rest[:n:n]}
		if ie.Magic() == MagicV1 {
			ie.wrapped, ie.wrapperTs = true, w.Timestamp
			ie.wrapperLAT = e.LogAppendTime()
		}
		inner = append(inner, ie)
		rest = rest[n:]
	}
	if len(inner) == 0 {
		return nil, fmt.Errorf("%w: found invalid compressed record set with no inner records", ErrInvalid)
	}
	if wrapperMagic == MagicV1 {
		base := int64(0) // a wrapper offset of 0: the inner offsets are taken as they are
		if e.Offset != 0 {
			last := inner[len(inner)-1].Offset
			if e.Offset < last {
				return nil, fmt.Errorf("%w: found invalid wrapper offset in compressed v1 message set, wrapper offset '%d' is less than the last inner message offset '%d' and it is not zero", ErrInvalid, e.Offset, last)
			}
			base = e.Offset - last
		}
		for i := range inner {
			inner[i].Offset += base
		}
	}
	return inner, nil
}

// decompress opens a wrapper's value (CompressionType.wrapForInput). Magic 0 LZ4 frames
// may carry the wrong frame-descriptor checksum that Kafka 0.8-0.9 wrote (KAFKA-3160):
// Kafka's KafkaLZ4BlockInputStream ignores that checksum for magic 0, so it is replaced by
// the right one before the frame is read.
func decompress(codec, magic int8, value []byte) ([]byte, error) {
	switch codec {
	case CodecGzip, CodecSnappy:
	case CodecLZ4:
		if magic == MagicV0 {
			value = fixLZ4HeaderChecksum(value)
		}
		out, err := readLimited(lz4.NewReader(bytes.NewReader(value)))
		if err != nil {
			return nil, fmt.Errorf("%w: lz4: %v", ErrCorrupt, err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: unknown compression type id %d", ErrCorrupt, codec)
	}
	out, err := recordbatch.Decompress(recordbatch.Codec(codec), value)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return out, nil
}

func readLimited(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(recordbatch.MaxDecompressed)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > recordbatch.MaxDecompressed {
		return nil, recordbatch.ErrTooLarge
	}
	return out, nil
}

// fixLZ4HeaderChecksum returns frame with the descriptor checksum (HC) recomputed: the
// second byte of xxHash32 over the descriptor (FLG, BD, optional content size and
// dictionary id). A frame too short to hold a descriptor is returned unchanged for the
// reader to refuse.
func fixLZ4HeaderChecksum(frame []byte) []byte {
	if len(frame) < 7 || binary.LittleEndian.Uint32(frame) != lz4Magic {
		return frame
	}
	flg := frame[4]
	end := 6 // after FLG and BD
	if flg&lz4FlagSize != 0 {
		end += 8
	}
	if flg&lz4FlagDict != 0 {
		end += 4
	}
	if len(frame) <= end {
		return frame
	}
	hc := byte(xxh32(frame[4:end], 0) >> 8)
	if frame[end] == hc {
		return frame
	}
	out := append([]byte(nil), frame...)
	out[end] = hc
	return out
}

// xxh32 is xxHash32 (the LZ4 frame format's checksum).
func xxh32(b []byte, seed uint32) uint32 {
	const (
		p1 uint32 = 2654435761
		p2 uint32 = 2246822519
		p3 uint32 = 3266489917
		p4 uint32 = 668265263
		p5 uint32 = 374761393
	)
	rotl := func(x uint32, r uint) uint32 { return x<<r | x>>(32-r) }
	round := func(acc, in uint32) uint32 { return rotl(acc+in*p2, 13) * p1 }
	n := len(b)
	var h uint32
	if n >= 16 {
		v1, v2, v3, v4 := seed+p1+p2, seed+p2, seed, seed-p1
		for len(b) >= 16 {
			v1 = round(v1, binary.LittleEndian.Uint32(b))
			v2 = round(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = round(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = round(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)
	} else {
		h = seed + p5
	}
	h += uint32(n)
	for ; len(b) >= 4; b = b[4:] {
		h = rotl(h+binary.LittleEndian.Uint32(b)*p3, 17) * p4
	}
	for _, c := range b {
		h = rotl(h+uint32(c)*p5, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}

// Decode reads a whole legacy message set strictly, for tools and tests: every entry must
// be magic 0 or 1 with a valid CRC; compressed wrappers are opened, their inner messages
// must have the wrapper's magic, a valid CRC and no compression of their own. Messages come
// back in order with absolute offsets; compressed wrappers are replaced by their inner
// messages.
func Decode(buf []byte) ([]Message, error) {
	entries, err := Entries(buf)
	if err != nil {
		return nil, err
	}
	var out []Message
	for i := range entries {
		e := &entries[i]
		if e.Magic() > MagicV1 {
			return nil, fmt.Errorf("%w: magic %d entry in a legacy message set", ErrInvalid, e.Magic())
		}
		if !e.ValidCRC() {
			return nil, fmt.Errorf("%w: record is corrupt (stored crc = %d, computed crc = %d)", ErrCorrupt, e.StoredCRC(), e.ComputeCRC())
		}
		if e.Codec() == CodecNone {
			m, err := e.Message()
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			continue
		}
		inner, err := e.Deep()
		if err != nil {
			return nil, err
		}
		for j := range inner {
			ie := &inner[j]
			if ie.Codec() != CodecNone {
				return nil, fmt.Errorf("%w: inner messages must not be compressed", ErrInvalid)
			}
			if ie.Magic() != e.Magic() {
				return nil, fmt.Errorf("%w: compressed message magic %d does not match wrapper magic %d", ErrInvalid, ie.Magic(), e.Magic())
			}
			if !ie.ValidCRC() {
				return nil, fmt.Errorf("%w: record is corrupt (stored crc = %d, computed crc = %d)", ErrCorrupt, ie.StoredCRC(), ie.ComputeCRC())
			}
			m, err := ie.Message()
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
	}
	return out, nil
}
