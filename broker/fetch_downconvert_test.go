package broker

// Fetch v0-v3 down-conversion: responses checked byte by byte (decoded by kmsg) against the
// log's batches, through the handler and streamed through a socket server. The real
// clients' tests are in fetch_downconvert_clients_test.go.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/msgset"
	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

// legacyMessage is a message of a down-converted set, wrappers expanded.
type legacyMessage struct {
	Offset     int64
	Magic      int8
	Attributes int8 // the inner message's (codec bits clear)
	Codec      recordbatch.Codec
	Timestamp  int64
	Key, Value []byte
}

// decodeLegacySet decodes the complete messages of a magic 0/1 set with kmsg's MessageV0 /
// MessageV1, checking CRCs, expanding compressed wrappers to absolute offsets. It returns
// the bytes after the last complete message (a partial one or overflow padding).
func decodeLegacySet(t *testing.T, b []byte) ([]legacyMessage, []byte) {
	t.Helper()
	var out []legacyMessage
	for len(b) >= 12 {
		size := int(int32(binary.BigEndian.Uint32(b[8:])))
		if size < 14 || 12+size > len(b) {
			break
		}
		msg := b[:12+size]
		b = b[12+size:]
		if got, want := binary.BigEndian.Uint32(msg[12:]), crc32.ChecksumIEEE(msg[16:]); got != want {
			t.Fatalf("message at %x: CRC %08x, computed %08x", msg[:8], got, want)
		}
		var m legacyMessage
		switch msg[16] {
		case 0:
			var v kmsg.MessageV0
			if err := v.ReadFrom(msg); err != nil {
				t.Fatal(err)
			}
			m = legacyMessage{v.Offset, v.Magic, v.Attributes, 0, -1, v.Key, v.Value}
		case 1:
			var v kmsg.MessageV1
			if err := v.ReadFrom(msg); err != nil {
				t.Fatal(err)
			}
			m = legacyMessage{v.Offset, v.Magic, v.Attributes, 0, v.Timestamp, v.Key, v.Value}
		default:
			t.Fatalf("magic %d", msg[16])
		}
		codec := recordbatch.Codec(m.Attributes & 7)
		if codec == recordbatch.None {
			out = append(out, m)
			continue
		}
		payload := m.Value
		if codec == recordbatch.LZ4 && m.Magic == 0 { // KAFKA-3160's header checksum: restore the standard one
			payload = append([]byte(nil), payload...)
			payload[6] = lz4HC(payload[4:6])
		}
		raw, err := recordbatch.Decompress(codec, payload)
		if err != nil {
			t.Fatalf("wrapper at %d: %v", m.Offset, err)
		}
		inner, rest := decodeLegacySet(t, raw)
		if len(rest) != 0 || len(inner) == 0 {
			t.Fatalf("wrapper at %d: %d inner messages, %d bytes left", m.Offset, len(inner), len(rest))
		}
		last := inner[len(inner)-1].Offset
		for _, im := range inner {
			if m.Magic == 1 {
				im.Offset = m.Offset - last + im.Offset
			}
			im.Codec = codec
			out = append(out, im)
		}
	}
	return out, b
}

// lz4HC is an LZ4 frame header checksum byte over the descriptor (XXH32 >> 8).
func lz4HC(desc []byte) byte {
	// Two bytes FLG and BD; only Kafka's frames (FLG 0x60, BD 0x40) occur here.
	if desc[0] == 0x60 && desc[1] == 0x40 {
		return 0x82
	}
	panic(fmt.Sprintf("unexpected LZ4 descriptor % x", desc))
}

// sourceMessages is what the log's batches (magic 2) at and after from become in magic:
// control batches dropped, plain batches from the fetch offset on, compressed ones whole.
func sourceMessages(t *testing.T, batches []byte, magic int8, from int64) []legacyMessage {
	t.Helper()
	var out []legacyMessage
	for len(batches) > 0 {
		b, rest, err := recordbatch.Next(batches)
		if err != nil {
			break // a partial batch at the end
		}
		batches = rest
		if b.Control() {
			continue
		}
		err = b.ForEachRecord(false, func(r *recordbatch.Record) error {
			m := legacyMessage{Offset: b.BaseOffset() + int64(r.OffsetDelta), Magic: magic, Codec: b.Codec(),
				Timestamp: b.BaseTimestamp() + r.TimestampDelta, Key: r.Key, Value: r.Value}
			if b.LogAppendTime() {
				m.Timestamp = b.MaxTimestamp()
				if magic == 1 {
					m.Attributes = msgset.AttrLogAppendTime
				}
			}
			if magic == 0 {
				m.Timestamp = -1
			}
			if b.Codec() != recordbatch.None || m.Offset >= from {
				out = append(out, m)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func sameLegacyMessages(t *testing.T, what string, got, want []legacyMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != w.Offset || g.Magic != w.Magic || g.Attributes != w.Attributes || g.Codec != w.Codec ||
			g.Timestamp != w.Timestamp || !bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) {
			t.Fatalf("%s: message %d:\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}

// dcBatch builds a producer's v2 batch (offsets from 0) of records with timestamps ts+i.
func dcBatch(t *testing.T, codec recordbatch.Codec, attrs int16, pid int64, ts int64, recs ...[2][]byte) []byte {
	t.Helper()
	h := recordbatch.Header{Attributes: attrs, LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: ts,
		MaxTimestamp: ts + int64(len(recs)) - 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1}
	if pid >= 0 {
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, 0, 0
	}
	rs := make([]recordbatch.Record, len(recs))
	for i, kv := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: kv[0], Value: kv[1],
			Headers: []recordbatch.RecordHeader{{Key: "dropped", Value: []byte("in magic 0/1")}}}
	}
	b, err := recordbatch.Build(h, rs, codec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fetchRaw sends a one-partition Fetch at version v through the handler and returns the
// partition of the response as the wire carries it (encoded, then decoded by kmsg).
func fetchRaw(t *testing.T, e *dataEnv, v int16, topic string, offset int64, partMax int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes = v, -1, 0, 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, partMax
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Through the wire encoding both ways, as a client sends it.
	wire := req.AppendTo(nil)
	dec := kmsg.NewPtrFetchRequest()
	dec.Version = v
	if err := dec.ReadFrom(wire); err != nil {
		t.Fatal(err)
	}
	resp, err := e.handle(dec)
	if err != nil {
		t.Fatalf("fetch v%d: %v", v, err)
	}
	body := resp.AppendTo(nil)
	got := kmsg.NewPtrFetchResponse()
	got.Version = v
	if err := got.ReadFrom(body); err != nil {
		t.Fatalf("fetch v%d response: %v", v, err)
	}
	if len(got.Topics) != 1 || len(got.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch v%d: %d topics", v, len(got.Topics))
	}
	return got.Topics[0].Partitions[0]
}

// TestFetchDownConvertBytes: Fetch v0-v3 through the handler over a log of plain and
// compressed batches (null keys, a tombstone, headers, log append time, an aborted
// transaction and its marker): the wire response decoded by kmsg holds exactly the source
// records in the version's magic; size limits, message.downconversion.enable and zstd as Kafka.
func TestFetchDownConvertBytes(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	e.createTopic("dc", 1)
	tp := logstore.TopicPartition{Topic: "dc", Partition: 0}
	part, err := e.rm.Partition(tp)
	if err != nil {
		t.Fatal(err)
	}
	l := part.Log()
	epoch := e.epochs[tp] - 1
	appendB := func(b []byte) {
		t.Helper()
		if _, err := l.AppendAsLeader(b, epoch); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	kv := func(k, v string) [2][]byte { return [2][]byte{[]byte(k), []byte(v)} }
	// 0-3 plain: null key, tombstone, empty key.
	appendB(dcBatch(t, recordbatch.None, 0, -1, now, kv("a", "1"), [2][]byte{nil, []byte("2")}, [2][]byte{[]byte("c"), nil}, [2][]byte{{}, []byte("4")}))
	// 4-6 gzip, 7-8 snappy, 9-11 lz4.
	appendB(dcBatch(t, recordbatch.Gzip, 0, -1, now+10, kv("g1", "x"), kv("g2", "y"), kv("g3", "z")))
	appendB(dcBatch(t, recordbatch.Snappy, 0, -1, now+20, kv("s1", "x"), kv("s2", "y")))
	appendB(dcBatch(t, recordbatch.LZ4, 0, -1, now+30, kv("l1", "x"), kv("l2", "y"), kv("l3", "z")))
	// 12-13 an aborted transaction, 14 its marker: read_uncommitted (all v0-v3 are) sees them.
	appendB(dcBatch(t, recordbatch.None, recordbatch.AttrTransactional, 4000, now+40, kv("t1", "aborted"), kv("t2", "aborted")))
	if _, err := l.AppendTxnMarker(4000, 0, false, 0, epoch); err != nil {
		t.Fatal(err)
	}
	// 15-16 log append time (gzip).
	cfg := l.Config()
	lat := cfg
	lat.MessageTimestampType = "LogAppendTime"
	l.SetConfig(lat)
	appendB(dcBatch(t, recordbatch.Gzip, 0, -1, now+50, kv("lat1", "x"), kv("lat2", "y")))
	l.SetConfig(cfg)
	// 17-18 plain again.
	appendB(dcBatch(t, recordbatch.None, 0, -1, now+60, kv("p1", "x"), kv("p2", "y")))
	l.UpdateHighWatermark(l.LogEndOffset())
	if leo := l.LogEndOffset(); leo != 19 {
		t.Fatalf("log end %d", leo)
	}

	// The source: the same range as batches (v4, no conversion).
	src := fetchRaw(t, e, 4, "dc", 0, 1<<20)
	if src.ErrorCode != 0 || len(src.RecordBatches) == 0 {
		t.Fatalf("v4 fetch: error %d, %d bytes", src.ErrorCode, len(src.RecordBatches))
	}
	before := e.apis.Conversions.Snapshot()
	for v, magic := range []int8{0, 0, 1, 1} { // Fetch v0-v1 read magic 0, v2-v3 magic 1
		v := int16(v)
		for _, from := range []int64{0, 2, 5, 13, 14, 16} {
			p := fetchRaw(t, e, v, "dc", from, 1<<20)
			if p.ErrorCode != 0 || p.HighWatermark != 19 {
				t.Fatalf("v%d from %d: error %d hw %d", v, from, p.ErrorCode, p.HighWatermark)
			}
			got, rest := decodeLegacySet(t, p.RecordBatches)
			srcFrom := fetchRaw(t, e, 4, "dc", from, 1<<20).RecordBatches
			want := sourceMessages(t, srcFrom, magic, from)
			sameLegacyMessages(t, fmt.Sprintf("v%d from %d", v, from), got, want)
			// The set is as large as the source data (one batch of which was a marker):
			// what no message fills is an overflow message (offset -1) running past the end.
			if len(p.RecordBatches) < len(srcFrom) {
				t.Fatalf("v%d from %d: %d bytes for %d of source", v, from, len(p.RecordBatches), len(srcFrom))
			}
			if len(rest) > 0 && (len(rest) < 12 || int64(binary.BigEndian.Uint64(rest)) != -1) {
				t.Fatalf("v%d from %d: %d trailing bytes % x", v, from, len(rest), rest[:min(len(rest), 12)])
			}
		}
	}
	after := e.apis.Conversions.Snapshot()
	if after.FetchRequests-before.FetchRequests != 24 || after.FetchMessages <= before.FetchMessages ||
		after.TemporaryBytes <= before.TemporaryBytes || after.TimeNanos <= before.TimeNanos {
		t.Fatalf("conversion stats before %+v after %+v", before, after)
	}
	// Magic 1 keeps the timestamps; check one against the batches directly.
	p := fetchRaw(t, e, 2, "dc", 17, 1<<20)
	if got, _ := decodeLegacySet(t, p.RecordBatches); len(got) != 2 || got[0].Timestamp != now+60 || got[1].Timestamp != now+61 ||
		string(got[1].Key) != "p2" {
		t.Fatalf("plain magic 1 messages %+v", got)
	}

	t.Run("size limits", func(t *testing.T) {
		first, _, _ := recordbatch.Next(src.RecordBatches)
		small := int32(len(first) - 1)
		// v0-v2 have no KIP-74: the cut first batch is no message at all.
		for _, v := range []int16{0, 2} {
			if p := fetchRaw(t, e, v, "dc", 0, small); p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
				t.Fatalf("v%d: error %d, %d bytes", v, p.ErrorCode, len(p.RecordBatches))
			}
		}
		// v3 returns the first batch whole.
		p := fetchRaw(t, e, 3, "dc", 0, small)
		if got, _ := decodeLegacySet(t, p.RecordBatches); len(got) != 4 {
			t.Fatalf("v3: %d messages", len(got))
		}
		// Two batches and a bit: the third message set is cut (a partial message the
		// client drops); the response holds as many bytes as the source read.
		second, _, _ := recordbatch.Next(src.RecordBatches[len(first):])
		limit := int32(len(first) + len(second) + 20)
		p = fetchRaw(t, e, 1, "dc", 0, limit)
		got, _ := decodeLegacySet(t, p.RecordBatches)
		if len(p.RecordBatches) != int(limit) || len(got) != 7 {
			t.Fatalf("v1 within %d bytes: %d bytes, %d messages", limit, len(p.RecordBatches), len(got))
		}
	})

	t.Run("downconversion disabled", func(t *testing.T) {
		off := cfg
		off.MessageDownconversionEnable = false
		l.SetConfig(off)
		defer l.SetConfig(cfg)
		for _, v := range []int16{0, 1, 2, 3} {
			if p := fetchRaw(t, e, v, "dc", 0, 1<<20); p.ErrorCode != kerr.UnsupportedVersion.Code || len(p.RecordBatches) != 0 || p.HighWatermark != -1 {
				t.Fatalf("v%d: error %d, hw %d, %d bytes", v, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
			}
		}
		if p := fetchRaw(t, e, 4, "dc", 0, 1<<20); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
			t.Fatalf("v4: error %d", p.ErrorCode)
		}
	})

	t.Run("zstd", func(t *testing.T) {
		// compression.type=zstd: every version before 10 is refused, whatever the data.
		z := cfg
		z.CompressionType = "zstd"
		l.SetConfig(z)
		for _, v := range []int16{1, 3, 9} {
			if p := fetchRaw(t, e, v, "dc", 0, 1<<20); p.ErrorCode != kerr.UnsupportedCompressionType.Code {
				t.Fatalf("v%d: error %d", v, p.ErrorCode)
			}
		}
		if p := fetchRaw(t, e, 10, "dc", 0, 1<<20); p.ErrorCode != 0 {
			t.Fatalf("v10: error %d", p.ErrorCode)
		}
		l.SetConfig(cfg)
		// A zstd batch (compression.type=producer) reached by an old fetch.
		appendB(dcBatch(t, recordbatch.Zstd, 0, -1, now+70, kv("z", "z")))
		l.UpdateHighWatermark(l.LogEndOffset())
		if p := fetchRaw(t, e, 3, "dc", 19, 1<<20); p.ErrorCode != kerr.UnsupportedCompressionType.Code {
			t.Fatalf("zstd batch first: error %d", p.ErrorCode)
		}
		// After other data: the messages before it, then padding; the next fetch gets the error.
		p := fetchRaw(t, e, 3, "dc", 17, 1<<20)
		if got, _ := decodeLegacySet(t, p.RecordBatches); p.ErrorCode != 0 || len(got) != 2 {
			t.Fatalf("zstd batch after plain: error %d, %d messages", p.ErrorCode, len(got))
		}
	})
}

// maxWriteRecorder records the largest single write and the total.
type maxWriteRecorder struct {
	bytes.Buffer
	largest int
}

func (w *maxWriteRecorder) Write(p []byte) (int, error) {
	w.largest = max(w.largest, len(p))
	return w.Buffer.Write(p)
}

// TestFetchDownConvertStreamed: a large v2 fetch goes to the socket converted chunk by
// chunk, framed as kmsg frames it, with the same bytes as the buffered encoding.
func TestFetchDownConvertStreamed(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	e.createTopic("big", 2)
	rng := rand.New(rand.NewSource(7))
	for p := int32(0); p < 2; p++ {
		part, err := e.rm.Partition(logstore.TopicPartition{Topic: "big", Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		l := part.Log()
		batches := 150
		if p == 1 {
			batches = 3
		}
		for i := 0; i < batches; i++ {
			recs := make([][2][]byte, 10)
			for j := range recs {
				v := make([]byte, 1000)
				rng.Read(v)
				recs[j] = [2][]byte{[]byte(fmt.Sprintf("k%d-%d", i, j)), v}
			}
			codec := recordbatch.None
			if i%2 == 1 {
				codec = recordbatch.Snappy
			}
			if _, err := l.AppendAsLeader(dcBatch(t, codec, 0, -1, time.Now().UnixMilli(), recs...), e.epochs[part.TopicPartition()]-1); err != nil {
				t.Fatal(err)
			}
		}
		l.UpdateHighWatermark(l.LogEndOffset())
	}
	e.serve()

	req := func() *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes = 2, -1, 0, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "big"
		for p := int32(0); p < 2; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 8<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	}
	// Over the socket (streamed)...
	wire := adminDial(t, e.addr).request(req(), 2).(*kmsg.FetchResponse)
	// ...and through the handler, encoded into a buffer, then streamed into a recorder.
	resp, err := e.handle(req())
	if err != nil {
		t.Fatal(err)
	}
	buffered := resp.AppendTo(nil)
	if !bytes.Equal(wire.AppendTo(nil), buffered) {
		t.Fatal("the streamed response differs from the buffered encoding")
	}
	for pi, p := range wire.Topics[0].Partitions {
		got, _ := decodeLegacySet(t, p.RecordBatches)
		if want := []int{1500, 30}[pi]; p.ErrorCode != 0 || len(got) != want {
			t.Fatalf("partition %d: error %d, %d messages, want %d", pi, p.ErrorCode, len(got), want)
		}
	}
	resp, err = e.handle(req())
	if err != nil {
		t.Fatal(err)
	}
	var rec maxWriteRecorder
	if err := resp.(streamedResponse).writeFrame(&rec, 99); err != nil {
		t.Fatal(err)
	}
	if frame := rec.Bytes(); !bytes.Equal(frame[8:], buffered) || int(binary.BigEndian.Uint32(frame)) != len(frame)-4 ||
		binary.BigEndian.Uint32(frame[4:]) != 99 {
		t.Fatal("writeFrame's frame differs from size + correlation id + AppendTo")
	}
	if rec.Len() < 1<<20 || rec.largest > 512<<10 {
		t.Fatalf("%d bytes written, largest write %d: not chunked", rec.Len(), rec.largest)
	}
}

func TestFetchErrorCodeStorageError(t *testing.T) {
	err := fmt.Errorf("read: %w", logstore.ErrKafkaStorage)
	for v, want := range map[int16]int16{0: kerr.NotLeaderForPartition.Code, 5: kerr.NotLeaderForPartition.Code,
		6: kerr.KafkaStorageError.Code, 16: kerr.KafkaStorageError.Code} {
		if got := fetchErrorCode(v, err); got != want {
			t.Errorf("v%d: %d, want %d", v, got, want)
		}
	}
	if got := fetchErrorCode(0, logstore.ErrOffsetOutOfRange); got != kerr.OffsetOutOfRange.Code {
		t.Errorf("offset out of range: %d", got)
	}
}
