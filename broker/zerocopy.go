package broker

// zerocopy.go sends Fetch responses without copying record bytes through user space, as
// Kafka's FileRecords.writeTo does with FileChannel.transferTo: the framing (header,
// topics, partition fields, each records length prefix) is encoded into a buffer, and each
// partition's segment ranges go from the page cache to the socket with sendfile(2) at an
// explicit file offset; the file's shared offset is never read or moved, so concurrent
// readers of one segment never disturb each other.
//
// Only plain TCP connections use it; anything else (TLS later) gets the copying path,
// where the Fetch handler preads the records into the response.
//
// The framing encoder mirrors kmsg's FetchResponse.AppendTo for v4-v16 (flexible from v12:
// compact arrays and strings, tagged fields); TestFetchFramingMatchesKmsg pins it byte for
// byte against kmsg for every version.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

// zeroCopyFetch collects the file regions of one Fetch response, which the socket server
// then sends with sendfile. One per connection, reset per request; used only by the
// connection's goroutine.
type zeroCopyFetch struct {
	parts []zeroCopyPart // in (topic, partition) order of the response
	out   *net.TCPConn
	raw   syscall.RawConn // out's, fetched once per connection
}

type zeroCopyPart struct {
	ti, pi int
	info   logstore.ReadInfo
}

// add records that partition pi of topic ti answers with info's regions. Calls come in
// response order.
func (z *zeroCopyFetch) add(ti, pi int, info logstore.ReadInfo) {
	z.parts = append(z.parts, zeroCopyPart{ti, pi, info})
}

func (z *zeroCopyFetch) reset() {
	clear(z.parts) // drop *os.File references
	z.parts = z.parts[:0]
}

// zeroCopyFor returns a zero-copy collector if c is a plain TCP connection, else nil.
func zeroCopyFor(c net.Conn) *zeroCopyFetch {
	if !zeroCopySupported {
		return nil
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return &zeroCopyFetch{out: tc, raw: raw}
}

// splice marks where, in the framing buffer, a partition's file regions go.
type splice struct {
	at      int // buffer offset: the bytes before it are written first
	regions []logstore.FileRegion
}

// errUnknownTags: the framing encoder does not carry tags the broker never sets.
var errUnknownTags = errors.New("broker: zero-copy fetch: unknown tags in response")

// appendFetchFrame appends the whole response frame (size, header v0/v1, body) to dst,
// leaving out the record bytes of the partitions in parts: their length prefix is
// written and their regions are returned as splices. Other partitions' RecordBatches are
// encoded inline.
func appendFetchFrame(dst []byte, correlationID int32, v *kmsg.FetchResponse, parts []zeroCopyPart) ([]byte, []splice, error) {
	version := v.Version
	flex := version >= 12
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flex {
		dst = append(dst, 0)
	}
	if v.UnknownTags.Len() > 0 {
		return dst, nil, errUnknownTags
	}
	var (
		splices []splice
		spliced int64
	)
	if version >= 1 {
		dst = kbin.AppendInt32(dst, v.ThrottleMillis)
	}
	if version >= 7 {
		dst = kbin.AppendInt16(dst, v.ErrorCode)
		dst = kbin.AppendInt32(dst, v.SessionID)
	}
	dst = zcAppendArrayLen(dst, len(v.Topics), flex)
	for ti := range v.Topics {
		t := &v.Topics[ti]
		if t.UnknownTags.Len() > 0 {
			return dst, nil, errUnknownTags
		}
		if version <= 12 {
			dst = zcAppendString(dst, t.Topic, flex)
		} else {
			dst = kbin.AppendUuid(dst, t.TopicID)
		}
		dst = zcAppendArrayLen(dst, len(t.Partitions), flex)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			if p.UnknownTags.Len() > 0 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.UnknownTags.Len() > 0 || p.SnapshotID.UnknownTags.Len() > 0 {
				return dst, nil, errUnknownTags
			}
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			dst = kbin.AppendInt64(dst, p.LastStableOffset)
			if version >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			at := p.AbortedTransactions
			if flex {
				dst = kbin.AppendCompactNullableArrayLen(dst, len(at), at == nil)
			} else {
				dst = kbin.AppendNullableArrayLen(dst, len(at), at == nil)
			}
			for i := range at {
				if at[i].UnknownTags.Len() > 0 {
					return dst, nil, errUnknownTags
				}
				dst = kbin.AppendInt64(dst, at[i].ProducerID)
				dst = kbin.AppendInt64(dst, at[i].FirstOffset)
				if flex {
					dst = append(dst, 0)
				}
			}
			if version >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			if len(parts) > 0 && parts[0].ti == ti && parts[0].pi == pi {
				info := parts[0].info
				parts = parts[1:]
				var n int64
				for _, r := range info.Regions {
					n += r.Len
				}
				if n > 1<<31-2 {
					return dst, nil, fmt.Errorf("broker: zero-copy fetch: %d record bytes", n)
				}
				if flex {
					dst = kbin.AppendUvarint(dst, uint32(n)+1)
				} else {
					dst = kbin.AppendInt32(dst, int32(n))
				}
				splices = append(splices, splice{at: len(dst), regions: info.Regions})
				spliced += n
			} else if flex {
				dst = kbin.AppendCompactNullableBytes(dst, p.RecordBatches)
			} else {
				dst = kbin.AppendNullableBytes(dst, p.RecordBatches)
			}
			if flex {
				dst = appendPartitionTags(dst, p)
			}
		}
		if flex {
			dst = append(dst, 0)
		}
	}
	if flex {
		if len(v.Brokers) == 0 {
			dst = append(dst, 0)
		} else {
			dst = append(dst, 1, 0) // one tag: 0 (Brokers)
			lenAt := len(dst)
			body := appendFetchBrokers(nil, v.Brokers)
			for i := range v.Brokers {
				if v.Brokers[i].UnknownTags.Len() > 0 {
					return dst[:lenAt], nil, errUnknownTags
				}
			}
			dst = kbin.AppendUvarint(dst, uint32(len(body)))
			dst = append(dst, body...)
		}
	}
	size := int64(len(dst)-start-4) + spliced
	if size > 1<<31-1 {
		return dst, nil, fmt.Errorf("broker: zero-copy fetch: %d-byte response", size)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(size))
	return dst, splices, nil
}

// appendPartitionTags appends a flexible partition's tagged fields (DivergingEpoch 0,
// CurrentLeader 1, SnapshotId 2), each present only when not at its default.
func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	de := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	cl := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	si := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	n := byte(0)
	for _, b := range []bool{de, cl, si} {
		if b {
			n++
		}
	}
	dst = append(dst, n)
	if de { // tag 0, size 13: int32 + int64 + empty tags
		dst = append(dst, 0, 13)
		dst = kbin.AppendInt32(dst, p.DivergingEpoch.Epoch)
		dst = kbin.AppendInt64(dst, p.DivergingEpoch.EndOffset)
		dst = append(dst, 0)
	}
	if cl { // tag 1, size 9
		dst = append(dst, 1, 9)
		dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderID)
		dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderEpoch)
		dst = append(dst, 0)
	}
	if si { // tag 2, size 13
		dst = append(dst, 2, 13)
		dst = kbin.AppendInt64(dst, p.SnapshotID.EndOffset)
		dst = kbin.AppendInt32(dst, p.SnapshotID.Epoch)
		dst = append(dst, 0)
	}
	return dst
}

// appendFetchBrokers appends the v16 NodeEndpoints array (always flexible).
func appendFetchBrokers(dst []byte, bs []kmsg.FetchResponseBroker) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(bs))
	for i := range bs {
		b := &bs[i]
		dst = kbin.AppendInt32(dst, b.NodeID)
		dst = kbin.AppendCompactString(dst, b.Host)
		dst = kbin.AppendInt32(dst, b.Port)
		dst = kbin.AppendCompactNullableString(dst, b.Rack)
		dst = append(dst, 0)
	}
	return dst
}

func zcAppendArrayLen(dst []byte, n int, flex bool) []byte {
	if flex {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func zcAppendString(dst []byte, s string, flex bool) []byte {
	if flex {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}

// writeResponse writes a Fetch response whose records were parked in z.
func (z *zeroCopyFetch) writeResponse(correlationID int32, resp kmsg.Response) error {
	fr, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return fmt.Errorf("broker: zero-copy write of %T", resp)
	}
	return z.writeFetchResponse(correlationID, fr)
}

// writeFetchResponse writes resp to z's connection: framing bytes with write(2), record
// bytes with sendfile(2). Once the first byte is out, any error leaves the stream
// unusable and the caller closes the connection.
func (z *zeroCopyFetch) writeFetchResponse(correlationID int32, resp *kmsg.FetchResponse) error {
	buf := getResponseBuf()
	defer func() { putResponseBuf(buf) }()
	buf, splices, err := appendFetchFrame(buf, correlationID, resp, z.parts)
	if err != nil {
		return err
	}
	prev := 0
	for _, s := range splices {
		if err := writeMore(z.raw, buf[prev:s.at]); err != nil {
			return err
		}
		prev = s.at
		for _, r := range s.regions {
			if err := sendFileRegion(z.raw, r); err != nil {
				return err
			}
		}
	}
	_, err = z.out.Write(buf[prev:])
	return err
}
