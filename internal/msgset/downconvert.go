package msgset

// downconvert.go turns record batches (magic 2, what the log holds) into magic 0 or 1
// message sets for Fetch v0-v3, as Kafka's RecordsUtil.downConvert, and does it lazily in
// chunks while the response is written, as LazyDownConversionRecords and
// LazyDownConversionRecordsSend (KIP-283): only the first non-empty chunk is converted up
// front, so the response size is known; the rest is converted chunk by chunk as it is sent.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// ErrDownConvertZstd is Kafka's UnsupportedCompressionTypeException for a zstd batch: magic
// 0/1 have no zstd (the partition is answered UNSUPPORTED_COMPRESSION_TYPE).
var ErrDownConvertZstd = errors.New("msgset: down-conversion of zstd-compressed batches is not supported")

// Stats are the counts of a conversion (Kafka's RecordValidationStats).
type Stats struct {
	// TemporaryBytes is the memory the conversion used: the source batches read plus the
	// uncompressed bytes of the messages written.
	TemporaryBytes int64
	// Messages is the number of messages written.
	Messages int64
	// Nanos is the time spent converting.
	Nanos int64
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) {
	s.TemporaryBytes += o.TemporaryBytes
	s.Messages += o.Messages
	s.Nanos += o.Nanos
}

// DownConvert appends batches converted to toMagic (0 or 1) to dst (RecordsUtil.downConvert):
// control batches are dropped, record headers too; a compressed batch becomes one wrapper
// message with the batch's codec; an uncompressed batch loses its records before
// firstOffset (the fetch offset: old formats have one message per plain "batch", and some
// librdkafka versions rely on not seeing earlier ones). Any zstd batch fails the whole call
// with ErrDownConvertZstd before anything is written.
func DownConvert(dst []byte, batches []recordbatch.Batch, toMagic int8, firstOffset int64) ([]byte, Stats, error) {
	start := time.Now()
	var st Stats
	for _, b := range batches {
		if !b.Control() && b.Codec() == recordbatch.Zstd {
			return dst, st, ErrDownConvertZstd
		}
	}
	for _, b := range batches {
		if b.Control() {
			continue
		}
		var err error
		dst, err = convertBatch(dst, b, toMagic, firstOffset, &st)
		if err != nil {
			st.Nanos = time.Since(start).Nanoseconds()
			return dst, st, err
		}
	}
	st.Nanos = time.Since(start).Nanoseconds()
	return dst, st, nil
}

// convertBatch is RecordsUtil.convertRecordBatch for one v2 batch.
func convertBatch(dst []byte, b recordbatch.Batch, toMagic int8, firstOffset int64, st *Stats) ([]byte, error) {
	it, err := b.Iter()
	if err != nil {
		return dst, fmt.Errorf("msgset: down-convert batch at %d: %w", b.BaseOffset(), err)
	}
	base, lat := b.BaseOffset(), b.LogAppendTime()
	compressed := b.Codec() != recordbatch.None
	var (
		r  recordbatch.Record
		bl *Builder
	)
	for it.Next(&r, false) {
		off := base + int64(r.OffsetDelta)
		if !compressed && off < firstOffset {
			continue
		}
		if bl == nil {
			// The batch's timestamp type carries over; with log append time every message
			// gets the batch's max timestamp, which is that time.
			bl = NewBuilder(dst, toMagic, b.Codec(), lat, b.MaxTimestamp(), off)
			// Each record gains at most a legacy message's overhead; compressed records
			// take more room once decompressed (a guess: twice).
			n := len(b.Records())
			if compressed {
				n *= 2
			}
			// (The count is the batch's word: bounded by the bytes, as every record takes some.)
			count := min(max(int(b.RecordCount()), 0), n)
			bl.Grow(count*(LogOverhead+RecordOverheadV1) + n)
		}
		ts := b.BaseTimestamp() + r.TimestampDelta
		if lat {
			ts = b.MaxTimestamp()
		}
		bl.Append(off, ts, r.Key, r.Value)
	}
	if err := it.Err(); err != nil {
		return dst, fmt.Errorf("msgset: down-convert batch at %d: %w", base, err)
	}
	if bl == nil {
		return dst, nil
	}
	out, err := bl.Close()
	if err != nil {
		return dst, fmt.Errorf("msgset: down-convert batch at %d: %w", base, err)
	}
	st.TemporaryBytes += int64(len(b)) + int64(bl.UncompressedBytes())
	st.Messages += int64(bl.Messages())
	return out, nil
}

// Chunking of LazyDownConversionRecordsSend: each chunk converts up to MAX_READ_SIZE bytes
// of source batches (at least one batch); the end of the response is padded with an
// "overflow" message of at least LOG_OVERHEAD bytes whose size runs past the response, so
// the client takes it for a partial message and ignores it.
const (
	lazyMaxReadSize        = 128 << 10
	minOverflowMessageSize = LogOverhead
	batchOverhead          = recordbatch.HeaderSize
	headerUpToMagic        = 17 // offset, length, partition leader epoch, magic
)

// Lazy is one partition's fetched batches to be sent down-converted
// (LazyDownConversionRecords). NewLazy converts the first chunk; WriteTo or AppendTo
// writes exactly Size bytes, converting the rest chunk by chunk. Not safe for concurrent
// use; write it once.
type Lazy struct {
	src         io.ReaderAt
	srcSize     int64
	toMagic     int8
	firstOffset int64

	size       int64
	first      []byte // the first converted chunk, until written
	firstStats Stats
	pos        int64 // source position of the next unconverted batch
	done       bool  // no more chunks (end of the source, or an error)
	stats      Stats
	err        error // why conversion stopped early, if it did
}

// NewLazy prepares the down-conversion of the srcSize bytes of src (the batches read from
// the log, perhaps ending in a partial batch) to toMagic. firstOffset is the fetch offset.
// It converts the first chunk holding a message: a zstd batch before it is
// ErrDownConvertZstd, and unreadable data an error, both for the partition to answer.
//
// The response size is that of the source data, or of the first converted chunk if larger,
// so one full message set always goes out (a consumer needs one to make progress); with
// batches but nothing to convert (control batches only) it is one overflow header, so
// the client sees a partial message; with no complete batch at all it is 0.
//
// Unlike Kafka 3.7, whose send skips only one source batch after the cached first chunk
// and so re-sends that chunk's messages when control batches came before them, the rest
// of the conversion starts after the batches the first chunk used.
func NewLazy(src io.ReaderAt, srcSize int64, toMagic int8, firstOffset int64) (*Lazy, error) {
	l := &Lazy{src: src, srcSize: srcSize, toMagic: toMagic, firstOffset: firstOffset}
	_, hasBatch, err := l.peek(0)
	if err != nil {
		return nil, err
	}
	first, st, err := l.nextChunk(0)
	if err != nil {
		return nil, err
	}
	switch {
	case first != nil:
		l.first, l.firstStats = first, st
		l.size = max(srcSize, int64(len(first)))
	case hasBatch:
		l.size = minOverflowMessageSize
		l.stats.Add(st)
	}
	if first == nil {
		l.done = true
	}
	return l, nil
}

// Size is the number of bytes WriteTo writes: the partition's records size in the response.
func (l *Lazy) Size() int64 { return l.size }

// Stats are the counts of the conversion done so far (all of it once written).
func (l *Lazy) Stats() Stats { return l.stats }

// Err is the error that ended the conversion before the source did (ErrDownConvertZstd
// for a later zstd batch, a corrupt batch, a read failure), nil otherwise. The bytes
// written are valid either way: the rest is overflow padding, and the client fetches again
// from the first message it did not get.
func (l *Lazy) Err() error { return l.err }

// WriteTo writes Size bytes to w: converted chunks, the last one cut at the end, or overflow
// padding once the chunks run out (LazyDownConversionRecordsSend.writeTo).
func (l *Lazy) WriteTo(w io.Writer) (int64, error) {
	var written int64
	for remaining := l.size; remaining > 0; {
		chunk := l.nextOrOverflow(remaining)
		n := min(int64(len(chunk)), remaining)
		m, err := w.Write(chunk[:n])
		written += int64(m)
		if err != nil {
			return written, err
		}
		remaining -= n
	}
	return written, nil
}

// AppendTo appends the Size bytes WriteTo would write to dst.
func (l *Lazy) AppendTo(dst []byte) []byte {
	for remaining := l.size; remaining > 0; {
		chunk := l.nextOrOverflow(remaining)
		n := min(int64(len(chunk)), remaining)
		dst = append(dst, chunk[:n]...)
		remaining -= n
	}
	return dst
}

// nextOrOverflow returns the next converted chunk or, when there is none, an overflow
// message for the remaining bytes.
func (l *Lazy) nextOrOverflow(remaining int64) []byte {
	if l.first != nil {
		c := l.first
		l.first = nil
		l.stats.Add(l.firstStats)
		return c
	}
	if !l.done {
		c, st, err := l.nextChunk(lazyMaxReadSize)
		l.stats.Add(st)
		if err != nil {
			l.err = err
		}
		if c != nil {
			return c
		}
		l.done = true
	}
	return overflowMessage(remaining)
}

// overflowMessage is buildOverflowBatch: offset -1 and a size one past the remaining bytes
// (at least a batch header), the rest zero.
func overflowMessage(remaining int64) []byte {
	buf := make([]byte, max(minOverflowMessageSize, min(remaining+1, lazyMaxReadSize)))
	binary.BigEndian.PutUint64(buf, ^uint64(0))
	binary.BigEndian.PutUint32(buf[8:], uint32(max(remaining+1, batchOverhead)))
	return buf
}

// nextChunk converts the next source batches: as many as fit maxRead bytes, at least one,
// going on past chunks that convert to nothing (control batches). nil at the end.
func (l *Lazy) nextChunk(maxRead int64) ([]byte, Stats, error) {
	var total Stats
	for {
		var (
			batches []recordbatch.Batch
			read    int64
		)
		for {
			n, ok, err := l.peek(l.pos)
			if err != nil {
				return nil, total, err
			}
			if !ok || (len(batches) > 0 && read+n > maxRead) {
				break
			}
			b, err := l.readBatch(l.pos, n)
			if err != nil {
				return nil, total, err
			}
			if b == nil { // the source shrank under us (truncation): that is its end
				break
			}
			batches = append(batches, b)
			l.pos += n
			read += n
		}
		if len(batches) == 0 {
			return nil, total, nil
		}
		out, st, err := DownConvert(make([]byte, 0, read+read/4), batches, l.toMagic, l.firstOffset)
		total.Add(st)
		if err != nil {
			return nil, total, err
		}
		if len(out) > 0 {
			return out, total, nil
		}
	}
}

// peek returns the size of the complete batch at pos, if one is there
// (FileLogInputStream.nextBatch): a batch cut by the end of the data is not.
func (l *Lazy) peek(pos int64) (int64, bool, error) {
	if pos+headerUpToMagic >= l.srcSize {
		return 0, false, nil
	}
	var hdr [headerUpToMagic]byte
	if _, err := l.src.ReadAt(hdr[:], pos); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("msgset: read batch header at %d: %w", pos, err)
	}
	length := int64(int32(binary.BigEndian.Uint32(hdr[8:])))
	if length < RecordOverheadV0 {
		return 0, false, fmt.Errorf("msgset: batch at %d: %w: length %d", pos, recordbatch.ErrBadLength, length)
	}
	if pos+LogOverhead+length > l.srcSize {
		return 0, false, nil
	}
	if m := int8(hdr[16]); m != recordbatch.Magic {
		return 0, false, fmt.Errorf("msgset: batch at %d: %w: %d", pos, recordbatch.ErrBadMagic, m)
	}
	return LogOverhead + length, true, nil
}

// readBatch reads the n-byte batch at pos; nil if the source ends first.
func (l *Lazy) readBatch(pos, n int64) (recordbatch.Batch, error) {
	buf := make([]byte, n)
	if _, err := l.src.ReadAt(buf, pos); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("msgset: read batch at %d: %w", pos, err)
	}
	b := recordbatch.Batch(buf)
	if len(b) < recordbatch.HeaderSize {
		return nil, fmt.Errorf("msgset: batch at %d: %w", pos, recordbatch.ErrShort)
	}
	return b, nil
}
