// Package recordbatch is a zero-copy view of Kafka's magic v2 record batch
// (clients/.../record/DefaultRecordBatch.java and DefaultRecord.java), the unit the log
// stores and the wire carries. Header layout (big-endian):
//
//	 0 baseOffset int64         (not covered by the CRC)
//	 8 batchLength int32        (bytes after this field)
//	12 partitionLeaderEpoch int32 (not covered by the CRC)
//	16 magic int8 = 2
//	17 crc uint32               CRC-32C of bytes [21, end)
//	21 attributes int16         bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control, 6 delete horizon
//	23 lastOffsetDelta int32
//	27 baseTimestamp int64
//	35 maxTimestamp int64
//	43 producerId int64
//	51 producerEpoch int16
//	53 baseSequence int32
//	57 recordCount int32
//	61 records (plain, or one compressed blob)
//
// Batch methods read fields straight from the bytes; setters write them in place.
package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

const (
	// HeaderSize is RECORD_BATCH_OVERHEAD.
	HeaderSize = 61
	// LogOverhead is the baseOffset + batchLength prefix (LOG_OVERHEAD).
	LogOverhead = 12
	// Magic is the only message format samsa writes.
	Magic = 2

	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	attrCodecMask     = 0x07
	AttrLogAppendTime = 0x08
	AttrTransactional = 0x10
	AttrControl       = 0x20
	AttrDeleteHorizon = 0x40
)

// Errors of batch parsing. logstore maps them to Kafka error codes.
var (
	ErrShort      = errors.New("recordbatch: batch shorter than its header or declared length")
	ErrBadLength  = errors.New("recordbatch: invalid batch length")
	ErrBadMagic   = errors.New("recordbatch: unsupported magic")
	ErrBadCRC     = errors.New("recordbatch: crc mismatch")
	ErrCorrupt    = errors.New("recordbatch: corrupt records")
	ErrBadCodec   = errors.New("recordbatch: unknown compression codec")
	ErrTooLarge   = errors.New("recordbatch: decompressed records too large")
	ErrBadRecords = errors.New("recordbatch: record count or offsets inconsistent")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is Kafka's Crc32C over b.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Batch is one whole record batch (len(b) == 12 + batchLength), viewed in place.
type Batch []byte

func (b Batch) BaseOffset() int64  { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }
func (b Batch) BatchLength() int32 { return int32(binary.BigEndian.Uint32(b[offLength:])) }
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
}
func (b Batch) Magic() int8         { return int8(b[offMagic]) }
func (b Batch) CRC() uint32         { return binary.BigEndian.Uint32(b[offCRC:]) }
func (b Batch) Attributes() int16   { return int16(binary.BigEndian.Uint16(b[offAttributes:])) }
func (b Batch) Codec() Codec        { return Codec(b.Attributes() & attrCodecMask) }
func (b Batch) LogAppendTime() bool { return b.Attributes()&AttrLogAppendTime != 0 }
func (b Batch) Transactional() bool { return b.Attributes()&AttrTransactional != 0 }
func (b Batch) Control() bool       { return b.Attributes()&AttrControl != 0 }
func (b Batch) HasDeleteHorizon() bool {
	return b.Attributes()&AttrDeleteHorizon != 0
}
func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
}
func (b Batch) LastOffset() int64    { return b.BaseOffset() + int64(b.LastOffsetDelta()) }
func (b Batch) NextOffset() int64    { return b.LastOffset() + 1 }
func (b Batch) BaseTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])) }
func (b Batch) MaxTimestamp() int64  { return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) }
func (b Batch) ProducerID() int64    { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }
func (b Batch) ProducerEpoch() int16 { return int16(binary.BigEndian.Uint16(b[offProducerEpoch:])) }
func (b Batch) BaseSequence() int32  { return int32(binary.BigEndian.Uint32(b[offBaseSequence:])) }
func (b Batch) RecordCount() int32   { return int32(binary.BigEndian.Uint32(b[offRecordCount:])) }

// Records is the records section: plain records, or the compressed blob.
func (b Batch) Records() []byte { return b[HeaderSize:] }

// ComputeCRC is the CRC-32C of attributes..end.
func (b Batch) ComputeCRC() uint32 { return CRC32C(b[offAttributes:]) }

// ValidCRC reports whether the stored CRC matches the bytes.
func (b Batch) ValidCRC() bool { return b.CRC() == b.ComputeCRC() }

// SetBaseOffset rewrites baseOffset in place (outside the CRC).
func (b Batch) SetBaseOffset(off int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off)) }

// SetPartitionLeaderEpoch rewrites partitionLeaderEpoch in place (outside the CRC).
func (b Batch) SetPartitionLeaderEpoch(e int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(e))
}

// SetMaxTimestamp sets maxTimestamp and the timestamp-type bit, recomputing the CRC only
// when either changed (DefaultRecordBatch.setMaxTimestamp).
func (b Batch) SetMaxTimestamp(logAppendTime bool, ts int64) {
	attrs := uint16(b.Attributes())
	newAttrs := attrs &^ AttrLogAppendTime
	if logAppendTime {
		newAttrs |= AttrLogAppendTime
	}
	if attrs == newAttrs && b.MaxTimestamp() == ts {
		return
	}
	binary.BigEndian.PutUint16(b[offAttributes:], newAttrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	b.SetCRC()
}

// SetCRC recomputes and stores the CRC.
func (b Batch) SetCRC() { binary.BigEndian.PutUint32(b[offCRC:], b.ComputeCRC()) }

// SetAttributes rewrites attributes (the caller then calls SetCRC).
func (b Batch) SetAttributes(a int16) { binary.BigEndian.PutUint16(b[offAttributes:], uint16(a)) }

// SetBaseTimestamp rewrites baseTimestamp (the caller then calls SetCRC).
func (b Batch) SetBaseTimestamp(ts int64) {
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(ts))
}

// DeleteHorizon returns the KIP-534 delete horizon, if the batch carries one.
func (b Batch) DeleteHorizon() (int64, bool) {
	if !b.HasDeleteHorizon() {
		return 0, false
	}
	return b.BaseTimestamp(), true
}

// PeekSize returns the total size (12 + batchLength) declared by the first batch in buf,
// or ErrShort if fewer than 12 bytes are there.
func PeekSize(buf []byte) (int, error) {
	if len(buf) < LogOverhead {
		return 0, ErrShort
	}
	n := int64(int32(binary.BigEndian.Uint32(buf[offLength:])))
	if n < HeaderSize-LogOverhead {
		return 0, fmt.Errorf("%w: %d", ErrBadLength, n)
	}
	return int(n) + LogOverhead, nil
}

// Next splits the first batch off buf, checking its length and magic (not the CRC).
func Next(buf []byte) (Batch, []byte, error) {
	size, err := PeekSize(buf)
	if err != nil {
		return nil, buf, err
	}
	if len(buf) < HeaderSize {
		return nil, buf, ErrShort
	}
	if m := int8(buf[offMagic]); m != Magic {
		return nil, buf, fmt.Errorf("%w: %d", ErrBadMagic, m)
	}
	if len(buf) < size {
		return nil, buf, ErrShort
	}
	return Batch(buf[:size:size]), buf[size:], nil
}

// Validate checks what a batch must satisfy to be stored: length, magic and CRC
// (DefaultRecordBatch.ensureValid). It does not look at records.
func Validate(b Batch) error {
	if len(b) < HeaderSize {
		return ErrShort
	}
	if int(b.BatchLength())+LogOverhead != len(b) {
		return ErrBadLength
	}
	if b.Magic() != Magic {
		return fmt.Errorf("%w: %d", ErrBadMagic, b.Magic())
	}
	if !b.ValidCRC() {
		return fmt.Errorf("%w: stored %d, computed %d", ErrBadCRC, b.CRC(), b.ComputeCRC())
	}
	return nil
}

// Header is the decoded header, for building batches and for printing.
type Header struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Header decodes the header fields.
func (b Batch) Header() Header {
	return Header{
		BaseOffset: b.BaseOffset(), PartitionLeaderEpoch: b.PartitionLeaderEpoch(), Attributes: b.Attributes(),
		LastOffsetDelta: b.LastOffsetDelta(), BaseTimestamp: b.BaseTimestamp(), MaxTimestamp: b.MaxTimestamp(),
		ProducerID: b.ProducerID(), ProducerEpoch: b.ProducerEpoch(), BaseSequence: b.BaseSequence(),
		RecordCount: b.RecordCount(),
	}
}

// AppendHeader appends a 61-byte header for a records section of recordsLen bytes, with
// the CRC left zero (call SetCRC once the records follow).
func AppendHeader(dst []byte, h Header, recordsLen int) []byte {
	var hdr [HeaderSize]byte
	binary.BigEndian.PutUint64(hdr[offBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(hdr[offLength:], uint32(HeaderSize-LogOverhead+recordsLen))
	binary.BigEndian.PutUint32(hdr[offLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	hdr[offMagic] = Magic
	binary.BigEndian.PutUint16(hdr[offAttributes:], uint16(h.Attributes))
	binary.BigEndian.PutUint32(hdr[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(hdr[offBaseTimestamp:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(hdr[offMaxTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(hdr[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(hdr[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(hdr[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(hdr[offRecordCount:], uint32(h.RecordCount))
	return append(dst, hdr[:]...)
}
