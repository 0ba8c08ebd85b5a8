package broker

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/klauspost/compress/snappy"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

// TestProduceLegacySarama: sarama pinned to 0.8.2 (Produce v0, magic 0) and 0.10.2 (Produce
// v2, magic 1) produces with each codec its version allows; kgo (Fetch v16, magic 2) reads
// every record back with its key, value and timestamp.
func TestProduceLegacySarama(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	type run struct {
		version sarama.KafkaVersion
		codec   sarama.CompressionCodec
		topic   string
	}
	var runs []run
	for _, v := range []sarama.KafkaVersion{sarama.V0_8_2_0, sarama.V0_10_2_0} {
		for _, c := range []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4} {
			if c == sarama.CompressionLZ4 && v == sarama.V0_8_2_0 {
				continue // sarama needs 0.10 for lz4
			}
			r := run{v, c, fmt.Sprintf("legacy-%s-%s", v, c)}
			e.createTopic(r.topic, 1)
			runs = append(runs, r)
		}
	}
	e.serve()
	before := e.apis.Conversions.Snapshot()
	ts := time.UnixMilli(time.Now().UnixMilli() - 5000)
	const n = 20
	total := 0
	for _, r := range runs {
		cfg := sarama.NewConfig()
		cfg.Version = r.version
		cfg.Producer.Return.Successes = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Compression = r.codec
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		p, err := sarama.NewSyncProducer([]string{e.addr}, cfg)
		if err != nil {
			t.Fatalf("%s: %v", r.topic, err)
		}
		var msgs []*sarama.ProducerMessage
		for i := 0; i < n; i++ {
			m := &sarama.ProducerMessage{Topic: r.topic, Value: sarama.StringEncoder(fmt.Sprintf("v%d", i)),
				Timestamp: ts.Add(time.Duration(i) * time.Millisecond)}
			if i%5 != 0 {
				m.Key = sarama.StringEncoder(fmt.Sprintf("k%d", i))
			}
			msgs = append(msgs, m)
		}
		// Two requests: a batch (one compressed wrapper when compressed), then one message.
		if err := p.SendMessages(msgs[:n-1]); err != nil {
			t.Fatalf("%s: send: %v", r.topic, err)
		}
		if _, off, err := p.SendMessage(msgs[n-1]); err != nil || off != n-1 {
			t.Fatalf("%s: last send: offset %d, %v", r.topic, off, err)
		}
		for i, m := range msgs {
			if m.Offset != int64(i) {
				t.Fatalf("%s: message %d got offset %d", r.topic, i, m.Offset)
			}
		}
		p.Close()
		total += n

		recs := consumeAll(t, e.addr, r.topic, n)
		for i, rec := range recs {
			wantKey := []byte(nil)
			if i%5 != 0 {
				wantKey = []byte(fmt.Sprintf("k%d", i))
			}
			wantTs := int64(-1) // magic 0 has no timestamp
			if r.version == sarama.V0_10_2_0 {
				wantTs = ts.UnixMilli() + int64(i)
			}
			if rec.Offset != int64(i) || !bytes.Equal(rec.Key, wantKey) || (rec.Key == nil) != (wantKey == nil) ||
				string(rec.Value) != fmt.Sprintf("v%d", i) || rec.Timestamp.UnixMilli() != wantTs ||
				rec.Attrs.TimestampType() != 0 || rec.ProducerID != -1 {
				t.Fatalf("%s: record %d: offset %d key %q value %q ts %d (want %d) type %d pid %d",
					r.topic, i, rec.Offset, rec.Key, rec.Value, rec.Timestamp.UnixMilli(), wantTs, rec.Attrs.TimestampType(), rec.ProducerID)
			}
			if int8(rec.Attrs.CompressionType()) != int8(r.codec) {
				t.Fatalf("%s: record %d stored with codec %d", r.topic, i, rec.Attrs.CompressionType())
			}
		}
	}
	after := e.apis.Conversions.Snapshot()
	if got := after.ProduceMessages - before.ProduceMessages; got != int64(total) {
		t.Fatalf("conversions counted %d messages, want %d", got, total)
	}
	// sarama may split a SendMessages batch over several requests.
	if got := after.ProduceRequests - before.ProduceRequests; got < int64(2*len(runs)) || got > int64(total) {
		t.Fatalf("conversions counted %d requests, want %d to %d", got, 2*len(runs), total)
	}
	if after.TimeNanos <= before.TimeNanos || after.TemporaryBytes <= before.TemporaryBytes {
		t.Fatalf("conversion time/bytes not counted: %+v -> %+v", before, after)
	}
}

// consumeAll reads n records of partition 0 of topic with kgo.
func consumeAll(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: consumed %d of %d: %v", topic, len(out), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("%s: fetch: %v", topic, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// legacyMsg encodes one message set entry (magic 0 or 1) by hand.
func legacyMsg(offset int64, magic, attr int8, ts int64, key, value []byte) []byte {
	body := []byte{byte(magic), byte(attr)}
	if magic == 1 {
		body = binary.BigEndian.AppendUint64(body, uint64(ts))
	}
	for _, b := range [][]byte{key, value} {
		if b == nil {
			body = binary.BigEndian.AppendUint32(body, 0xffffffff)
			continue
		}
		body = binary.BigEndian.AppendUint32(body, uint32(len(b)))
		body = append(body, b...)
	}
	out := binary.BigEndian.AppendUint64(nil, uint64(offset))
	out = binary.BigEndian.AppendUint32(out, uint32(4+len(body)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
	return append(out, body...)
}

func legacyGzipWrapper(offset int64, magic int8, ts int64, inner []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(inner)
	w.Close()
	return legacyMsg(offset, magic, 1, ts, nil, buf.Bytes())
}

// legacyProduce sends one partition's records with Produce vN through the dispatcher.
func legacyProduce(t *testing.T, e *dataEnv, version int16, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := e.handle(req)
	if err != nil {
		t.Fatalf("produce v%d: %v", version, err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// setTopicConfig changes a log's config in place (what a topic config change does).
func setTopicConfig(t *testing.T, e *dataEnv, topic string, fn func(*logstore.LogConfig)) {
	t.Helper()
	p, err := e.rm.Partition(logstore.TopicPartition{Topic: topic, Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Log().Config()
	fn(&c)
	p.Log().SetConfig(c)
}

// storedBatches returns the batches of partition 0 of topic.
func storedBatches(t *testing.T, e *dataEnv, topic string) []recordbatch.Batch {
	t.Helper()
	p, err := e.rm.Partition(logstore.TopicPartition{Topic: topic, Partition: 0})
	if err != nil {
		t.Fatal(err)
	}
	l := p.Log()
	info, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	data, err := info.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var out []recordbatch.Batch
	for len(data) > 0 {
		b, rest, err := recordbatch.Next(data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		data = rest
	}
	return out
}

// TestProduceLegacyFormats checks the conversion and Kafka's validation outcomes with
// hand-built message sets, request by request.
func TestProduceLegacyFormats(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	for _, name := range []string{"plain", "lat", "recompress", "compact", "small", "errors"} {
		e.createTopic(name, 1)
	}
	now := time.Now().UnixMilli()

	// v0, magic 0: offsets from 0, no timestamps, NONE.
	p := legacyProduce(t, e, 0, "plain", bytes.Join([][]byte{
		legacyMsg(0, 0, 0, 0, []byte("k"), []byte("a")), legacyMsg(0, 0, 0, 0, nil, []byte("b")),
	}, nil))
	if p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("v0: %+v", p)
	}
	// v1, magic 1 with a gzip wrapper of relative offsets; then an empty set (NONE, -1).
	p = legacyProduce(t, e, 1, "plain", legacyGzipWrapper(1, 1, now, bytes.Join([][]byte{
		legacyMsg(0, 1, 0, now-1, nil, []byte("c")), legacyMsg(1, 1, 0, now, []byte("k2"), nil),
	}, nil)))
	if p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("v1 gzip: %+v", p)
	}
	if p = legacyProduce(t, e, 2, "plain", nil); p.ErrorCode != 0 || p.BaseOffset != -1 {
		t.Fatalf("v2 empty: %+v", p)
	}
	// A magic 2 batch in a v2 request is appended as such.
	if p = legacyProduce(t, e, 2, "plain", makeBatch(now, testRecord{value: []byte("d")})); p.ErrorCode != 0 || p.BaseOffset != 4 {
		t.Fatalf("v2 with a record batch: %+v", p)
	}
	bs := storedBatches(t, e, "plain")
	if len(bs) != 3 || bs[0].RecordCount() != 2 || bs[0].MaxTimestamp() != -1 || bs[1].Codec() != recordbatch.Gzip ||
		bs[1].MaxTimestamp() != now || bs[1].BaseTimestamp() != now-1 || bs[1].ProducerID() != -1 || bs[1].PartitionLeaderEpoch() < 0 {
		t.Fatalf("stored batches: %d, first %+v second %+v", len(bs), bs[0].Header(), bs[1].Header())
	}

	// LogAppendTime topic: the broker's time, answered in v2's log_append_time.
	setTopicConfig(t, e, "lat", func(c *logstore.LogConfig) { c.MessageTimestampType = "LogAppendTime" })
	p = legacyProduce(t, e, 2, "lat", legacyMsg(0, 1, 0, 5, []byte("k"), []byte("v")))
	if p.ErrorCode != 0 || p.LogAppendTime < now {
		t.Fatalf("LogAppendTime: %+v", p)
	}
	if bs = storedBatches(t, e, "lat"); !bs[0].LogAppendTime() || bs[0].MaxTimestamp() != p.LogAppendTime {
		t.Fatalf("LogAppendTime batch %+v", bs[0].Header())
	}

	// compression.type=lz4 recompresses a snappy wrapper; uncompressed stores plain records.
	setTopicConfig(t, e, "recompress", func(c *logstore.LogConfig) { c.CompressionType = "lz4" })
	inner := bytes.Join([][]byte{legacyMsg(0, 0, 0, 0, nil, []byte("x")), legacyMsg(1, 0, 0, 0, nil, []byte("y"))}, nil)
	if p = legacyProduce(t, e, 0, "recompress", legacyMsg(1, 0, 2, 0, nil, snappy.Encode(nil, inner))); p.ErrorCode != 0 {
		t.Fatalf("recompress: %+v", p)
	}
	setTopicConfig(t, e, "recompress", func(c *logstore.LogConfig) { c.CompressionType = "uncompressed" })
	if p = legacyProduce(t, e, 0, "recompress", legacyGzipWrapper(1, 0, 0, inner)); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("decompress: %+v", p)
	}
	if bs = storedBatches(t, e, "recompress"); len(bs) != 2 || bs[0].Codec() != recordbatch.LZ4 || bs[1].Codec() != recordbatch.None {
		t.Fatalf("recompressed batches %d", len(bs))
	}

	// Faults, each as Kafka answers it.
	setTopicConfig(t, e, "compact", func(c *logstore.LogConfig) { c.CleanupPolicy = []string{"compact"} })
	setTopicConfig(t, e, "small", func(c *logstore.LogConfig) { c.MaxMessageBytes = 100 })
	setTopicConfig(t, e, "errors", func(c *logstore.LogConfig) { c.MessageTimestampAfterMaxMs = 3600 * 1000 })
	good := legacyMsg(0, 1, 0, now, []byte("k"), []byte("v"))
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 1
	zstdWrapper := legacyMsg(0, 1, 4, now, nil, []byte("zstd"))
	for _, c := range []struct {
		name    string
		version int16
		topic   string
		records []byte
		want    *kerr.Error
	}{
		{"crc", 2, "errors", badCRC, kerr.CorruptMessage},
		{"crc after a good message", 0, "errors", append(append([]byte(nil), good...), badCRC...), kerr.CorruptMessage},
		{"too large", 2, "small", legacyMsg(0, 1, 0, now, nil, make([]byte, 100)), kerr.MessageTooLarge},
		{"no key on a compacted topic", 2, "compact", legacyMsg(0, 1, 0, now, nil, []byte("v")), kerr.InvalidRecord},
		{"timestamp out of range", 2, "errors", legacyMsg(0, 1, 0, now+48*3600*1000, nil, []byte("v")), kerr.InvalidTimestamp},
		{"LogAppendTime from the producer without a timestamp", 2, "errors", legacyMsg(0, 1, 8, -1, nil, []byte("v")), kerr.InvalidTimestamp},
		{"LogAppendTime from the producer on a LogAppendTime topic", 2, "lat", legacyMsg(0, 1, 8, now, nil, []byte("v")), kerr.InvalidTimestamp},
		{"nested wrapper", 2, "errors", legacyGzipWrapper(0, 1, now, legacyGzipWrapper(0, 1, now, good)), kerr.InvalidRecord},
		{"two wrappers", 2, "errors", append(legacyGzipWrapper(0, 1, now, good), legacyGzipWrapper(0, 1, now, good)...), kerr.InvalidRecord},
		{"magic 0 after magic 1", 1, "errors", append(append([]byte(nil), good...), legacyMsg(0, 0, 0, 0, nil, []byte("v"))...), kerr.InvalidRecord},
		{"inner magic differs", 2, "errors", legacyGzipWrapper(0, 1, now, legacyMsg(0, 0, 0, 0, nil, []byte("v"))), kerr.InvalidRecord},
		{"zstd wrapper", 2, "errors", zstdWrapper, kerr.InvalidRecord},
		{"record batch after a message", 2, "errors", append(append([]byte(nil), good...), makeBatch(now, testRecord{value: []byte("v")})...), kerr.InvalidRecord},
	} {
		if p := legacyProduce(t, e, c.version, c.topic, c.records); p.ErrorCode != c.want.Code || p.BaseOffset != -1 {
			t.Errorf("%s: error %d base offset %d, want %s", c.name, p.ErrorCode, p.BaseOffset, c.want.Message)
		}
	}
	// A LogAppendTime attribute with a valid timestamp on a CreateTime topic passes
	// (LogValidator checks the timestamp first).
	if p := legacyProduce(t, e, 2, "errors", legacyMsg(0, 1, 8, now, nil, []byte("v"))); p.ErrorCode != 0 {
		t.Fatalf("LogAppendTime attribute with a CreateTime timestamp: %+v", p)
	}
	if bs = storedBatches(t, e, "errors"); len(bs) != 1 {
		t.Fatalf("%d batches appended by the failed requests", len(bs)-1)
	}
}

// TestProduceLegacyKgo: franz-go's own v0/v1 message-set encoder (kgo pinned to Kafka 0.9
// and 0.10.1: Produce v1 with magic 0, Produce v2 with magic 1), each codec, read back at v2.
func TestProduceLegacyKgo(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	type run struct {
		versions *kversion.Versions
		magic    int
		codec    kgo.CompressionCodec
		id       int8
		topic    string
	}
	var runs []run
	for _, v := range []struct {
		vs    *kversion.Versions
		magic int
	}{{kversion.V0_9_0(), 0}, {kversion.V0_10_1(), 1}} {
		for id, c := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression()} {
			if id == 3 && v.magic == 0 {
				continue // lz4 came with 0.10
			}
			r := run{v.vs, v.magic, c, int8(id), fmt.Sprintf("kgo-legacy-%d-%d", v.magic, id)}
			e.createTopic(r.topic, 1)
			runs = append(runs, r)
		}
	}
	e.serve()
	ts := time.UnixMilli(time.Now().UnixMilli() - 1000)
	for _, r := range runs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.MaxVersions(r.versions), kgo.ProducerBatchCompression(r.codec),
			kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic(r.topic))
		if err != nil {
			t.Fatal(err)
		}
		before := e.apis.Conversions.Snapshot().ProduceMessages
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		const n = 10
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)), Timestamp: ts.Add(time.Duration(i) * time.Millisecond)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("%s: %v", r.topic, err)
		}
		cancel()
		cl.Close()
		if conv := e.apis.Conversions.Snapshot().ProduceMessages - before; conv != n {
			t.Fatalf("%s: %d messages up-converted, want %d (not an old Produce?)", r.topic, conv, n)
		}
		got := consumeAll(t, e.addr, r.topic, n)
		for i, rec := range got {
			wantTs := ts.UnixMilli() + int64(i)
			if r.magic == 0 {
				wantTs = -1
			}
			if rec.Offset != int64(i) || string(rec.Key) != fmt.Sprintf("k%d", i) || string(rec.Value) != fmt.Sprintf("v%d", i) ||
				rec.Timestamp.UnixMilli() != wantTs || int8(rec.Attrs.CompressionType()) != r.id {
				t.Fatalf("%s: record %d: offset %d key %q value %q ts %d (want %d) codec %d",
					r.topic, i, rec.Offset, rec.Key, rec.Value, rec.Timestamp.UnixMilli(), wantTs, rec.Attrs.CompressionType())
			}
		}
	}
}

// TestProduceLegacyRealBroker runs Produce v2 through a whole broker (ZooKeeper, controller)
// on a topic created with compression.type=gzip and LogAppendTime: sarama 0.10.2 sends snappy
// wrappers, the log holds gzip v2 batches stamped with the broker's time, and sarama gets
// that time back in the response's log_append_time.
func TestProduceLegacyRealBroker(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, testChroot(t), map[string]string{"controlled.shutdown.enable": "false"})
	waitController(t, b)
	addr := b.Addr("PLAINTEXT")
	const topic = "legacy-real"
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, map[string]*string{
		"compression.type": kmsg.StringPtr("gzip"), "message.timestamp.type": kmsg.StringPtr("LogAppendTime"),
	}, topic); err != nil {
		t.Fatal(err)
	}
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V0_10_2_0
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Compression = sarama.CompressionSnappy
	cfg.Producer.Retry.Max, cfg.Producer.Retry.Backoff = 50, 100*time.Millisecond // until the leader is known
	cfg.Metadata.Retry.Max, cfg.Metadata.Retry.Backoff = 50, 100*time.Millisecond
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now().UnixMilli()
	var msgs []*sarama.ProducerMessage
	for i := 0; i < 5; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(i)),
			Value: sarama.StringEncoder(fmt.Sprintf("v%d", i)), Timestamp: time.UnixMilli(1000)})
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		if m.Offset != int64(i) || m.Timestamp.UnixMilli() < start {
			t.Fatalf("message %d: offset %d, timestamp %d (want the broker's append time >= %d)", i, m.Offset, m.Timestamp.UnixMilli(), start)
		}
	}
	recs := consumeAll(t, addr, topic, len(msgs))
	for i, r := range recs {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("v%d", i) || string(r.Key) != fmt.Sprint(i) ||
			r.Attrs.TimestampType() != 1 || r.Timestamp.UnixMilli() < start || r.Attrs.CompressionType() != 1 {
			t.Fatalf("record %d: offset %d key %q value %q timestamp type %d at %d codec %d",
				i, r.Offset, r.Key, r.Value, r.Attrs.TimestampType(), r.Timestamp.UnixMilli(), r.Attrs.CompressionType())
		}
	}
}

// TestProduceLegacyKcat: librdkafka (kcat) without ApiVersions, falling back to 0.9.0:
// Produce v1 with magic 0 message sets, whose LZ4 frames carry the old descriptor checksum
// of KAFKA-3160, with each codec. (A fallback of 0.10 or later makes librdkafka ask for
// ApiVersions anyway, and then it uses Produce v3+.)
func TestProduceLegacyKcat(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: apt-get install -y kcat")
	}
	e := newDataEnv(t)
	type run struct{ fallback, codec, topic string }
	var runs []run
	for _, fb := range []string{"0.9.0"} {
		for _, c := range []string{"none", "gzip", "snappy", "lz4"} {
			r := run{fb, c, "kcat-" + strings.ReplaceAll(fb, ".", "") + "-" + c}
			e.createTopic(r.topic, 1)
			runs = append(runs, r)
		}
	}
	e.serve()
	const n = 10
	var in bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	for _, r := range runs {
		before := e.apis.Conversions.Snapshot().ProduceMessages
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, kcat, "-P", "-b", e.addr, "-t", r.topic, "-p", "0", "-K", ":", "-z", r.codec,
			"-X", "api.version.request=false", "-X", "broker.version.fallback="+r.fallback, "-X", "linger.ms=50")
		cmd.Stdin = bytes.NewReader(in.Bytes())
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: kcat: %v\n%s", r.topic, err, out)
		}
		if conv := e.apis.Conversions.Snapshot().ProduceMessages - before; conv != n {
			t.Fatalf("%s: %d messages up-converted, want %d\n%s", r.topic, conv, n, out)
		}
		for i, rec := range consumeAll(t, e.addr, r.topic, n) {
			if rec.Offset != int64(i) || string(rec.Key) != fmt.Sprintf("k%d", i) || string(rec.Value) != fmt.Sprintf("v%d", i) {
				t.Fatalf("%s: record %d: offset %d key %q value %q", r.topic, i, rec.Offset, rec.Key, rec.Value)
			}
			if rec.Timestamp.UnixMilli() != -1 {
				t.Fatalf("%s: magic 0 record %d has timestamp %d", r.topic, i, rec.Timestamp.UnixMilli())
			}
		}
	}
}
