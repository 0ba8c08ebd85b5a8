package logstore

// DumpLog is the counterpart of Kafka's kafka.tools.DumpLogSegments (kafka-dump-log.sh,
// 3.7): the same lines for .log, .index, .timeindex and .txnindex files, so output can be
// compared with Kafka's own tool.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// DumpOptions are kafka-dump-log's flags.
type DumpOptions struct {
	PrintDataLog     bool // --print-data-log (implies DeepIteration)
	DeepIteration    bool // --deep-iteration
	IndexSanityCheck bool // --index-sanity-check
	VerifyIndexOnly  bool // --verify-index-only
	// MaxMessageSize bounds the batch read at an index entry (--max-message-size, 5 MiB).
	MaxMessageSize int
	// MaxBytes limits how much of a .log is read (--max-bytes, unlimited).
	MaxBytes int64
	// SkipRecordMetadata omits per-record metadata (--skip-record-metadata).
	SkipRecordMetadata bool
	// Stderr receives the mismatch reports Kafka prints to standard error (nil: w).
	Stderr io.Writer
	// Parser, when set, renders a data record's key and value for PrintDataLog
	// (DumpLogSegments' MessageParser: the offsets and transaction log decoders); a nil
	// result is not printed and an error stops the file. nil: UTF-8 text (StringDecoder).
	Parser func(key, value []byte) (k, v *string, err error)
}

// DumpLog prints each file as kafka-dump-log.sh does.
func DumpLog(w io.Writer, files []string, opts DumpOptions) error {
	if opts.Stderr == nil {
		opts.Stderr = w
	}
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = 5 * 1024 * 1024
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = math.MaxInt32
	}
	if opts.PrintDataLog {
		opts.DeepIteration = true
	}
	var errs []error
	nonConsecutive := map[string][][2]int64{}
	indexMismatches := map[string][][2]int64{}
	for _, f := range files {
		fmt.Fprintf(w, "Dumping %s\n", f)
		var err error
		switch filepath.Ext(f) {
		case LogFileSuffix:
			err = dumpLogFile(w, f, opts, nonConsecutive)
		case IndexFileSuffix:
			err = dumpIndexFile(w, f, opts, indexMismatches)
		case TimeIndexFileSuffix:
			err = dumpTimeIndexFile(w, f, opts)
		case TxnIndexFileSuffix:
			err = dumpTxnIndexFile(w, f)
		case SnapshotFileSuffix:
			err = DumpProducerSnapshot(w, f)
		default:
			fmt.Fprintf(opts.Stderr, "Ignoring unknown file %s\n", f)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("dump %s: %w", f, err))
		}
	}
	for name, list := range indexMismatches {
		fmt.Fprintf(opts.Stderr, "Mismatches in :%s\n", name)
		for _, m := range list {
			fmt.Fprintf(opts.Stderr, "  Index offset: %d, log offset: %d\n", m[0], m[1])
		}
	}
	for name, list := range nonConsecutive {
		fmt.Fprintf(opts.Stderr, "Non-consecutive offsets in %s\n", name)
		for _, p := range list {
			fmt.Fprintf(opts.Stderr, "  %d is followed by %d\n", p[0], p[1])
		}
	}
	return errors.Join(errs...)
}

func baseOffsetOfFile(path string) (int64, error) {
	name := filepath.Base(path)
	return strconv.ParseInt(strings.SplitN(name, ".", 2)[0], 10, 64)
}

// lastSequence is DefaultRecordBatch.incrementSequence(baseSequence, delta).
func incrementSequence(seq, delta int32) int32 {
	if seq == -1 {
		return -1
	}
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

func timestampTypeName(b recordbatch.Batch) string {
	if b.LogAppendTime() {
		return "LogAppendTime"
	}
	return "CreateTime"
}

func dumpLogFile(w io.Writer, path string, opts DumpOptions, nonConsecutive map[string][][2]int64) error {
	start, err := baseOffsetOfFile(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Log starting offset: %d\n", start)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := min(st.Size(), opts.MaxBytes)
	var (
		pos, lastOffset int64 = 0, -1
		hdr             [recordbatch.LogOverhead]byte
		buf             []byte
	)
	abs, _ := filepath.Abs(path)
	for end-pos >= recordbatch.LogOverhead {
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return err
		}
		size := int64(int32(binary.BigEndian.Uint32(hdr[8:]))) + recordbatch.LogOverhead
		if size < recordbatch.HeaderSize || pos+size > end {
			break
		}
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		b := recordbatch.Batch(buf[:size])
		if _, err := f.ReadAt(b, pos); err != nil {
			return err
		}
		dh := "OptionalLong.empty"
		if h, ok := b.DeleteHorizon(); ok {
			dh = fmt.Sprintf("OptionalLong[%d]", h)
		}
		fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s",
			b.BaseOffset(), b.LastOffset(), b.RecordCount(), b.BaseSequence(), incrementSequence(b.BaseSequence(), b.LastOffsetDelta()),
			b.ProducerID(), b.ProducerEpoch(), b.PartitionLeaderEpoch(), b.Transactional(), b.Control(), dh)
		fmt.Fprintf(w, " position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
			pos, timestampTypeName(b), b.MaxTimestamp(), size, b.Magic(), b.Codec(), b.CRC(), b.Magic() == 2 && b.ValidCRC())
		if opts.DeepIteration && b.Magic() == 2 {
			err := b.ForEachRecord(true, func(r *recordbatch.Record) error {
				off := b.BaseOffset() + int64(r.OffsetDelta)
				if lastOffset != -1 && off != lastOffset+1 {
					nonConsecutive[abs] = append(nonConsecutive[abs], [2]int64{lastOffset, off})
				}
				lastOffset = off
				prefix := "| "
				if !opts.SkipRecordMetadata {
					ts := b.BaseTimestamp() + r.TimestampDelta
					if b.LogAppendTime() {
						ts = b.MaxTimestamp()
					}
					keys := make([]string, len(r.Headers))
					for i, h := range r.Headers {
						keys[i] = h.Key
					}
					fmt.Fprintf(w, "%soffset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
						prefix, off, timestampTypeName(b), ts, lenOrNull(r.Key), lenOrNull(r.Value),
						incrementSequence(b.BaseSequence(), r.OffsetDelta), strings.Join(keys, ","))
					prefix = " "
					if b.Control() {
						fmt.Fprint(w, controlRecordString(r))
					}
				}
				if opts.PrintDataLog && !b.Control() {
					if opts.Parser != nil {
						k, v, err := opts.Parser(r.Key, r.Value)
						if err != nil {
							return fmt.Errorf("record at offset %d: %w", off, err)
						}
						if k != nil {
							fmt.Fprintf(w, "%skey: %s", prefix, *k)
						}
						if v != nil {
							fmt.Fprintf(w, " payload: %s", *v)
						}
					} else {
						if r.Key != nil {
							fmt.Fprintf(w, "%skey: %s", prefix, javaString(r.Key))
						}
						if r.Value != nil {
							fmt.Fprintf(w, " payload: %s", javaString(r.Value))
						}
					}
				}
				fmt.Fprintln(w)
				return nil
			})
			if err != nil {
				return fmt.Errorf("batch at position %d: %w", pos, err)
			}
		}
		pos += size
	}
	if trailing := st.Size() - pos; trailing > 0 && opts.MaxBytes == math.MaxInt32 {
		fmt.Fprintf(w, "Found %d invalid bytes at the end of %s\n", trailing, filepath.Base(path))
	}
	return nil
}

func lenOrNull(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// javaString decodes bytes as UTF-8 the way new String(bytes, UTF_8) does (bad bytes become U+FFFD).
func javaString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// controlRecordString is the " endTxnMarker: COMMIT coordinatorEpoch: N" part for control records.
func controlRecordString(r *recordbatch.Record) string {
	if len(r.Key) < 4 {
		return " controlType: UNKNOWN(-1)"
	}
	typ := int16(binary.BigEndian.Uint16(r.Key[2:]))
	switch typ {
	case 0, 1:
		name := "ABORT"
		if typ == 1 {
			name = "COMMIT"
		}
		epoch := int32(-1)
		if len(r.Value) >= 6 {
			epoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
		}
		return fmt.Sprintf(" endTxnMarker: %s coordinatorEpoch: %d", name, epoch)
	case 2:
		return fmt.Sprintf(" controlType: LEADER_CHANGE(%d)", typ)
	}
	return fmt.Sprintf(" controlType: UNKNOWN(%d)", typ)
}

func readWholeFile(path string) ([]byte, error) { return os.ReadFile(path) }

func dumpIndexFile(w io.Writer, path string, opts DumpOptions, mismatches map[string][][2]int64) error {
	base, err := baseOffsetOfFile(path)
	if err != nil {
		return err
	}
	data, err := readWholeFile(path)
	if err != nil {
		return err
	}
	entries := len(data) / offsetIndexEntrySize
	if entries == 0 {
		fmt.Fprintf(w, "%s is empty.\n", path)
		return nil
	}
	if opts.IndexSanityCheck {
		if len(data)%offsetIndexEntrySize != 0 {
			return fmt.Errorf("%w: index file %s length %d is not a multiple of %d", ErrCorruptMessage, path, len(data), offsetIndexEntrySize)
		}
		last := base + int64(int32(binary.BigEndian.Uint32(data[(entries-1)*8:])))
		if last < base {
			return fmt.Errorf("%w: corrupt index found, index file (%s) has non-zero size but the last offset is %d which is less than the base offset %d",
				ErrCorruptMessage, path, last, base)
		}
		fmt.Fprintf(w, "%s passed sanity check.\n", path)
		return nil
	}
	logPath := filepath.Join(filepath.Dir(path), strings.SplitN(filepath.Base(path), ".", 2)[0]+LogFileSuffix)
	lf, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer lf.Close()
	abs, _ := filepath.Abs(path)
	var hdr [recordbatch.HeaderSize]byte
	for i := 0; i < entries; i++ {
		off := base + int64(int32(binary.BigEndian.Uint32(data[i*8:])))
		pos := int64(int32(binary.BigEndian.Uint32(data[i*8+4:])))
		// A crash leaves zero entries in the preallocated file: stop at the first one.
		if off == base && i > 0 {
			return nil
		}
		if n, _ := lf.ReadAt(hdr[:], pos); n == len(hdr) {
			if last := recordbatch.Batch(hdr[:]).LastOffset(); last != off {
				mismatches[abs] = append(mismatches[abs], [2]int64{off, last})
			}
		}
		if !opts.VerifyIndexOnly {
			fmt.Fprintf(w, "offset: %d position: %d\n", off, pos)
		}
	}
	return nil
}

func dumpTimeIndexFile(w io.Writer, path string, opts DumpOptions) error {
	base, err := baseOffsetOfFile(path)
	if err != nil {
		return err
	}
	data, err := readWholeFile(path)
	if err != nil {
		return err
	}
	entries := len(data) / timeIndexEntrySize
	if opts.IndexSanityCheck {
		if len(data)%timeIndexEntrySize != 0 {
			return fmt.Errorf("%w: time index file %s length %d is not a multiple of %d", ErrCorruptMessage, path, len(data), timeIndexEntrySize)
		}
		fmt.Fprintf(w, "%s passed sanity check.\n", path)
		return nil
	}
	for i := 0; i < entries; i++ {
		ts := int64(binary.BigEndian.Uint64(data[i*12:]))
		off := base + int64(int32(binary.BigEndian.Uint32(data[i*12+8:])))
		if off == base && i > 0 {
			return nil
		}
		if !opts.VerifyIndexOnly {
			fmt.Fprintf(w, "timestamp: %d offset: %d\n", ts, off)
		}
	}
	return nil
}

func dumpTxnIndexFile(w io.Writer, path string) error {
	data, err := readWholeFile(path)
	if err != nil {
		return err
	}
	for i := 0; i+34 <= len(data); i += 34 {
		e := data[i:]
		fmt.Fprintf(w, "version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
			int16(binary.BigEndian.Uint16(e)), int64(binary.BigEndian.Uint64(e[2:])), int64(binary.BigEndian.Uint64(e[10:])),
			int64(binary.BigEndian.Uint64(e[18:])), int64(binary.BigEndian.Uint64(e[26:])))
	}
	return nil
}
