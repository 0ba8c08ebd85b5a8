package broker

// fetch_downconvert.go — Fetch v0-v3 for clients that only read old message formats, as
// KafkaApis.handleFetchRequest's maybeConvertFetchedData: the log holds record batches
// (magic 2, as with any inter-broker protocol from 3.0), so v0-v1 get them down-converted
// to magic 0 and v2-v3 to magic 1 (internal/msgset), lazily: the handler converts only each
// partition's first chunk, to know the response size (LazyDownConversionRecords); the
// socket server then writes the response itself (streamedResponse, conn.go), converting the
// rest chunk by chunk as it goes out (LazyDownConversionRecordsSend). Encoding it with
// AppendTo (direct Handle callers) converts into the buffer instead. Zero-copy is never
// used for these versions. The conversion is counted in APIs.Conversions.
//
// Also here, for v0-v9: a partition whose topic has compression.type=zstd is answered
// UNSUPPORTED_COMPRESSION_TYPE (those versions predate zstd), and for v0-v5 a
// KAFKA_STORAGE_ERROR becomes NOT_LEADER_OR_FOLLOWER, which old clients retry
// (maybeDownConvertStorageError).

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/msgset"
	"github.com/samsa-kafka/samsa/logstore"
)

// fetchDownConvertMagic is the message format a Fetch version can read when the log holds
// magic 2: 0 for v0-v1, 1 for v2-v3; -1 from v4 on (no conversion).
func fetchDownConvertMagic(version int16) int8 {
	switch {
	case version <= 1:
		return msgset.MagicV0
	case version <= 3:
		return msgset.MagicV1
	}
	return -1
}

// fetchErrorCode is a fetch partition's error code for err: KAFKA_STORAGE_ERROR is
// NOT_LEADER_OR_FOLLOWER for v0-v5, whose clients do not know it and would not retry.
func fetchErrorCode(version int16, err error) int16 {
	code := ErrorCode(err)
	if code == kerr.KafkaStorageError.Code && version <= 5 {
		return kerr.NotLeaderForPartition.Code
	}
	return code
}

// legacyFetch collects a v0-v3 response's down-converted partitions, in response order.
type legacyFetch struct {
	stats   *ConversionStats
	parts   []lazyFetchPart
	logger  *logrus.Entry
	metrics *apiMetrics    // nil: none
	timing  *requestTiming // the request's conversion time and memory; nil: none
}

type lazyFetchPart struct {
	ti, pi int
	tp     logstore.TopicPartition
	lazy   *msgset.Lazy
}

// fetchConvertPartition applies maybeConvertFetchedData to partition p (slot ti, pi of the
// response) of a Fetch below v10, from its read result r. It reports whether it filled p,
// in which case the caller is done with the partition: always for v0-v3, whose records
// must never reach the zero-copy path (it frames v4+ only).
func (a *APIs) fetchConvertPartition(rc *RequestContext, version int16, replicaID int32, lf **legacyFetch,
	fr FetchPartitionRequest, r FetchPartitionResult, ti, pi int, p *kmsg.FetchResponseTopicPartition) bool {
	if version >= 10 {
		return false
	}
	var l *logstore.Log
	if part, err := a.Replicas.Partition(fr.TP); err == nil {
		l = part.Log()
	}
	if l != nil && l.Config().CompressionType == "zstd" {
		setFetchPartitionError(p, kerr.UnsupportedCompressionType.Code)
		return true
	}
	magic := fetchDownConvertMagic(version)
	if magic < 0 {
		return false
	}
	if l == nil {
		// No local log (any more): an error, or a log removed since the read. Kafka would
		// then send the batches unconverted, which no v0-v3 client reads: send none.
		if r.Err != nil {
			p.ErrorCode = fetchErrorCode(version, r.Err)
		} else {
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
		}
		return true
	}
	if replicaID < 0 && !l.Config().MessageDownconversionEnable {
		setFetchPartitionError(p, kerr.UnsupportedVersion.Code)
		return true
	}
	if r.Err != nil {
		p.ErrorCode = fetchErrorCode(version, r.Err)
		return true
	}
	p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
	lazy, err := msgset.NewLazy(regionsReaderAt(r.Records.Regions), r.Records.Size, magic, fr.FetchOffset)
	if err != nil {
		if errors.Is(err, msgset.ErrDownConvertZstd) {
			setFetchPartitionError(p, kerr.UnsupportedCompressionType.Code)
			return true
		}
		// Unreadable or corrupt log data: Kafka's conversion would throw and fail the
		// response; here the partition alone fails.
		rc.Log.WithError(err).WithFields(logrus.Fields{"topic": fr.TP.Topic, "partition": fr.TP.Partition}).
			Warn("fetch down-conversion failed")
		setFetchPartitionError(p, kerr.UnknownServerError.Code)
		return true
	}
	if *lf == nil {
		*lf = &legacyFetch{stats: &a.Conversions, logger: rc.Log, metrics: a.Metrics}
		a.Conversions.FetchRequests.Add(1)
	}
	(*lf).parts = append((*lf).parts, lazyFetchPart{ti: ti, pi: pi, tp: fr.TP, lazy: lazy})
	return true
}

// setFetchPartitionError is FetchResponse.partitionResponse: the error, unknown offsets,
// empty records.
func setFetchPartitionError(p *kmsg.FetchResponseTopicPartition, code int16) {
	p.ErrorCode = code
	p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
	p.AbortedTransactions = nil
	p.RecordBatches = []byte{}
}

// response returns what the handler answers: resp itself, or for v0-v3 with
// down-converted partitions resp wrapped so that encoding it runs the conversion.
func (lf *legacyFetch) response(resp *kmsg.FetchResponse) kmsg.Response {
	if lf == nil {
		return resp
	}
	return &downConvertedFetchResponse{FetchResponse: resp, lf: lf}
}

// downConvertedFetchResponse is a v0-v3 FetchResponse whose down-converted records are
// produced while it is encoded, the way LazyDownConversionRecordsSend produces them while
// the response is written. Encode it once: the conversion is consumed.
type downConvertedFetchResponse struct {
	*kmsg.FetchResponse
	lf *legacyFetch
}

// AppendTo encodes the response body (FetchResponse v0-v3: throttle from v1, then topics of
// partition, error, high watermark and records), converting each down-converted
// partition's records into dst chunk by chunk.
func (r *downConvertedFetchResponse) AppendTo(dst []byte) []byte {
	return r.appendBody(dst, func(dst []byte, part lazyFetchPart) []byte {
		dst = kbin.AppendInt32(dst, int32(part.lazy.Size()))
		dst = part.lazy.AppendTo(dst)
		r.lf.count(part)
		return dst
	})
}

// appendBody appends the body with records(dst, part) writing each down-converted
// partition's records field.
func (r *downConvertedFetchResponse) appendBody(dst []byte, records func([]byte, lazyFetchPart) []byte) []byte {
	v := r.FetchResponse
	parts := r.lf.parts
	if v.Version >= 1 {
		dst = kbin.AppendInt32(dst, v.ThrottleMillis)
	}
	dst = kbin.AppendArrayLen(dst, len(v.Topics))
	for ti := range v.Topics {
		t := &v.Topics[ti]
		dst = kbin.AppendString(dst, t.Topic)
		dst = kbin.AppendArrayLen(dst, len(t.Partitions))
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			if len(parts) > 0 && parts[0].ti == ti && parts[0].pi == pi {
				dst = records(dst, parts[0])
				parts = parts[1:]
				continue
			}
			dst = kbin.AppendNullableBytes(dst, p.RecordBatches)
		}
	}
	return dst
}

// writeFrame writes the whole response frame (size, header v0, body) to w, converting the
// records as they are written, one chunk at a time (LazyDownConversionRecordsSend): the
// sizes are known up front, so the framing goes first and no partition's converted records
// are ever held whole. Once a byte is out, an error leaves the stream unusable.
func (r *downConvertedFetchResponse) writeFrame(w io.Writer, correlationID int32) error {
	type splice struct {
		at   int
		part lazyFetchPart
	}
	var splices []splice
	var total int64
	frame := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(frame[4:], uint32(correlationID))
	frame = r.appendBody(frame, func(dst []byte, part lazyFetchPart) []byte {
		dst = kbin.AppendInt32(dst, int32(part.lazy.Size()))
		splices = append(splices, splice{len(dst), part})
		total += part.lazy.Size()
		return dst
	})
	size := int64(len(frame)-4) + total
	if size > 1<<31-1 {
		return fmt.Errorf("broker: down-converted fetch response of %d bytes", size)
	}
	binary.BigEndian.PutUint32(frame, uint32(size))
	bw := bufio.NewWriterSize(w, 64<<10)
	prev := 0
	for _, s := range splices {
		if _, err := bw.Write(frame[prev:s.at]); err != nil {
			return err
		}
		prev = s.at
		if _, err := s.part.lazy.WriteTo(bw); err != nil {
			return err
		}
		r.lf.count(s.part)
	}
	if _, err := bw.Write(frame[prev:]); err != nil {
		return err
	}
	return bw.Flush()
}

// count adds a written partition's conversion to the broker's counts.
func (lf *legacyFetch) count(part lazyFetchPart) {
	st := part.lazy.Stats()
	lf.stats.FetchMessages.Add(st.Messages)
	lf.metrics.fetchConverted(part.tp.Topic, st.Messages) // FetchMessageConversionsPerSec (metrics_api.go)
	lf.stats.TimeNanos.Add(st.Nanos)
	lf.stats.TemporaryBytes.Add(st.TemporaryBytes)
	lf.timing.addConversion(st.Nanos, st.TemporaryBytes)
	if err := part.lazy.Err(); err != nil && !errors.Is(err, msgset.ErrDownConvertZstd) {
		lf.logger.WithError(err).WithFields(logrus.Fields{"topic": part.tp.Topic, "partition": part.tp.Partition}).
			Warn("fetch down-conversion stopped early")
	}
}

// regionsReaderAt reads a fetch's file regions as one byte range, with positional reads
// only (the segment files are shared by every reader).
type regionsReaderAt []logstore.FileRegion

func (rs regionsReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for _, r := range rs {
		if off >= r.Len {
			off -= r.Len
			continue
		}
		m := int(min(int64(len(p)-n), r.Len-off))
		k, err := r.File.ReadAt(p[n:n+m], r.Pos+off)
		n += k
		if err != nil {
			return n, err
		}
		off = 0
		if n == len(p) {
			return n, nil
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// streamedResponse is a response the socket server writes to the connection itself
// (conn.go), instead of encoding it into a buffer first.
type streamedResponse interface {
	kmsg.Response
	writeFrame(w io.Writer, correlationID int32) error
}

var _ streamedResponse = (*downConvertedFetchResponse)(nil)
