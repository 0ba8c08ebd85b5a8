package recordbatch

import (
	"encoding/binary"
	"fmt"
)

// RecordHeader is one record header; Value nil means null.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one record of a batch (DefaultRecord). Key/Value nil means null; slices alias
// the batch (or its decompressed records) and are valid while those are.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	Headers        []RecordHeader
	// Size is the record's encoded size including its length prefix.
	Size int
}

func corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, a...))
}

// readVarint reads a zigzag varint that must fit int32 (at most 5 bytes).
func readVarint(b []byte) (int32, int, error) {
	// Lengths, deltas and counts almost always take one or two bytes: decode those inline
	// (the append path walks every record of every produce batch).
	if len(b) > 0 && b[0] < 0x80 {
		u := uint32(b[0])
		return int32(u>>1) ^ -int32(u&1), 1, nil
	}
	if len(b) > 1 && b[1] < 0x80 {
		u := uint32(b[0]&0x7f) | uint32(b[1])<<7
		return int32(u>>1) ^ -int32(u&1), 2, nil
	}
	return readVarintSlow(b)
}

func readVarintSlow(b []byte) (int32, int, error) {
	v, n := binary.Varint(b)
	if n <= 0 || n > 5 || v > 0x7fffffff || v < -0x80000000 {
		return 0, 0, corrupt("bad varint")
	}
	return int32(v), n, nil
}

func readVarlong(b []byte) (int64, int, error) {
	if len(b) > 0 && b[0] < 0x80 {
		u := uint64(b[0])
		return int64(u>>1) ^ -int64(u&1), 1, nil
	}
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, 0, corrupt("bad varlong")
	}
	return v, n, nil
}

// readBytes reads a varint length then that many bytes; -1 means null.
func readBytes(b []byte) ([]byte, int, error) {
	l, n, err := readVarint(b)
	if err != nil {
		return nil, 0, err
	}
	if l < 0 {
		if l != -1 {
			return nil, 0, corrupt("negative length %d", l)
		}
		return nil, n, nil
	}
	if int(l) > len(b)-n {
		return nil, 0, corrupt("length %d beyond record", l)
	}
	return b[n : n+int(l) : n+int(l)], n + int(l), nil
}

// ParseRecord decodes the record at the start of b (DefaultRecord.readFrom). When
// withHeaders is false, headers are framed and checked but not collected (no allocation).
func ParseRecord(b []byte, r *Record, withHeaders bool) error {
	bodyLen, n, err := readVarint(b)
	if err != nil {
		return err
	}
	if bodyLen < 0 || int(bodyLen) > len(b)-n {
		return corrupt("record length %d beyond batch", bodyLen)
	}
	r.Size = n + int(bodyLen)
	body := b[n:r.Size]
	if len(body) < 1 {
		return corrupt("empty record")
	}
	r.Attributes = int8(body[0])
	p := 1
	ts, m, err := readVarlong(body[p:])
	if err != nil {
		return err
	}
	r.TimestampDelta, p = ts, p+m
	od, m, err := readVarint(body[p:])
	if err != nil {
		return err
	}
	r.OffsetDelta, p = od, p+m
	if r.Key, m, err = readBytes(body[p:]); err != nil {
		return err
	}
	p += m
	if r.Value, m, err = readBytes(body[p:]); err != nil {
		return err
	}
	p += m
	hc, m, err := readVarint(body[p:])
	if err != nil {
		return err
	}
	p += m
	if hc < 0 {
		return corrupt("negative header count %d", hc)
	}
	r.Headers = r.Headers[:0]
	for i := int32(0); i < hc; i++ {
		k, m, err := readBytes(body[p:])
		if err != nil {
			return err
		}
		if k == nil {
			return corrupt("null header key")
		}
		p += m
		v, m, err := readBytes(body[p:])
		if err != nil {
			return err
		}
		p += m
		if withHeaders {
			r.Headers = append(r.Headers, RecordHeader{Key: string(k), Value: v})
		}
	}
	if p != len(body) {
		return corrupt("record has %d trailing bytes", len(body)-p)
	}
	return nil
}

// ForEachRecord decodes the batch's records (decompressing if needed) and calls fn for each,
// checking that exactly RecordCount records fill the section. r is reused between calls.
func (b Batch) ForEachRecord(withHeaders bool, fn func(r *Record) error) error {
	it, err := b.Iter()
	if err != nil {
		return err
	}
	var r Record
	for it.Next(&r, withHeaders) {
		if fn != nil {
			if err := fn(&r); err != nil {
				return err
			}
		}
	}
	return it.Err()
}

// RecordIter walks a batch's records where they lie (in the batch, or in its decompressed
// records), parsing each record's fields without copying or allocating. Unlike
// ForEachRecord it takes no callback, so the caller's Record can stay on its stack: the
// append path validates every record of every produce batch with it.
type RecordIter struct {
	data  []byte
	i, n  int32
	err   error
	ended bool
}

// Iter returns an iterator over the batch's records, decompressing them first if needed.
func (b Batch) Iter() (RecordIter, error) {
	data := b.Records()
	if c := b.Codec(); c != None {
		var err error
		if data, err = Decompress(c, data); err != nil {
			return RecordIter{}, err
		}
	}
	return newRecordIter(data, b.RecordCount()), nil
}

func newRecordIter(data []byte, count int32) RecordIter {
	it := RecordIter{data: data, n: count}
	if count < 0 {
		it.err, it.ended = corrupt("negative record count %d", count), true
	}
	return it
}

// Next parses the next record into r and reports whether there was one. After it returns
// false, Err tells whether the records section was malformed: a record that does not
// parse, fewer than RecordCount records, or bytes after the last one.
func (it *RecordIter) Next(r *Record, withHeaders bool) bool {
	if it.ended {
		return false
	}
	if it.i == it.n {
		it.ended = true
		if len(it.data) != 0 {
			it.err = corrupt("%d bytes after the last of %d records", len(it.data), it.n)
		}
		return false
	}
	if len(it.data) == 0 {
		it.err, it.ended = corrupt("batch ends after %d of %d records", it.i, it.n), true
		return false
	}
	if err := ParseRecord(it.data, r, withHeaders); err != nil {
		it.err, it.ended = err, true
		return false
	}
	it.data = it.data[r.Size:]
	it.i++
	return true
}

// Err is the error that ended the walk, nil if every record parsed and filled the section.
func (it *RecordIter) Err() error { return it.err }

// AppendRecord encodes r (DefaultRecord.writeTo) and appends it to dst.
func AppendRecord(dst []byte, r *Record) []byte {
	var body []byte
	var tmp [binary.MaxVarintLen64]byte
	put := func(v int64) { body = append(body, tmp[:binary.PutVarint(tmp[:], v)]...) }
	putBytes := func(b []byte) {
		if b == nil {
			put(-1)
			return
		}
		put(int64(len(b)))
		body = append(body, b...)
	}
	body = append(body, byte(r.Attributes))
	put(r.TimestampDelta)
	put(int64(r.OffsetDelta))
	putBytes(r.Key)
	putBytes(r.Value)
	put(int64(len(r.Headers)))
	for _, h := range r.Headers {
		put(int64(len(h.Key)))
		body = append(body, h.Key...)
		putBytes(h.Value)
	}
	dst = append(dst, tmp[:binary.PutVarint(tmp[:], int64(len(body)))]...)
	return append(dst, body...)
}

// Build encodes a batch from h and records with codec. Records' OffsetDelta and
// TimestampDelta are taken as given; h.RecordCount is set to len(records) and the CRC computed.
// h.Attributes' codec bits are replaced by codec.
func Build(h Header, records []Record, codec Codec) (Batch, error) {
	var raw []byte
	for i := range records {
		raw = AppendRecord(raw, &records[i])
	}
	payload := raw
	if codec != None {
		var err error
		if payload, err = Compress(codec, raw); err != nil {
			return nil, err
		}
	}
	h.RecordCount = int32(len(records))
	h.Attributes = h.Attributes&^attrCodecMask | int16(codec)
	out := AppendHeader(make([]byte, 0, HeaderSize+len(payload)), h, len(payload))
	out = append(out, payload...)
	b := Batch(out)
	b.SetCRC()
	return b, nil
}

// Recompress returns a copy of b whose records are encoded with codec, header fields kept.
func Recompress(b Batch, codec Codec) (Batch, error) {
	data := b.Records()
	if c := b.Codec(); c != None {
		var err error
		if data, err = Decompress(c, data); err != nil {
			return nil, err
		}
	}
	payload := data
	if codec != None {
		var err error
		if payload, err = Compress(codec, data); err != nil {
			return nil, err
		}
	}
	h := b.Header()
	h.Attributes = h.Attributes&^attrCodecMask | int16(codec)
	out := AppendHeader(make([]byte, 0, HeaderSize+len(payload)), h, len(payload))
	out = append(out, payload...)
	nb := Batch(out)
	nb.SetCRC()
	return nb, nil
}
