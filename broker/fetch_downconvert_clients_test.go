package broker

// Fetch v0-v3 with real clients: sarama pinned to 0.8.2 and 0.10.2, librdkafka (kcat)
// without ApiVersions, and the down-conversion configs on a whole broker.

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchDownConvertSarama: sarama consumers pinned to 0.8.2 (Fetch v0, magic 0) and
// 0.10.2 (Fetch v3, magic 1) read what kgo produced as v2 batches, each codec, with keys,
// values and (magic 1) timestamps.
func TestFetchDownConvertSarama(t *testing.T) {
	t.Parallel()
	e := newDataEnv(t)
	codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression()}
	for name := range codecs {
		e.createTopic("old-"+name, 1)
	}
	e.serve()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 300
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for name, codec := range codecs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(5*time.Millisecond),
			kgo.ProducerBatchMaxBytes(1<<10), // many batches: fetches of 2 KiB end in cut messages
			kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			r := &kgo.Record{Topic: "old-" + name, Value: []byte(fmt.Sprintf("%s-value-%d", name, i)),
				Timestamp: base.Add(time.Duration(i) * time.Millisecond), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
			if i%3 != 0 {
				r.Key = []byte(fmt.Sprintf("key-%d", i))
			}
			if i%50 == 49 {
				r.Value = nil // tombstone
			}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}

	before := e.apis.Conversions.Snapshot()
	consumed := int64(0)
	for _, v := range []sarama.KafkaVersion{sarama.V0_8_2_0, sarama.V0_10_2_0} {
		for name := range codecs {
			if name == "lz4" && !v.IsAtLeast(sarama.V0_10_0_0) {
				// sarama reads LZ4 from 0.10 on only: Kafka's magic 0 frames carry the header
				// checksum of 0.8/0.9 clients (KAFKA-3160), which sarama's reader rejects.
				continue
			}
			t.Run(v.String()+"/"+name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cfg := sarama.NewConfig()
				cfg.Version = v
				cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
				if v.IsAtLeast(sarama.V0_10_1_0) {
					// Fetch v3 (KIP-74): small fetches, many ending in a cut message. Fetch
					// v0-v2 would get nothing for a batch over the limit, as from Kafka.
					cfg.Consumer.Fetch.Default = 2 << 10
				}
				c, err := sarama.NewConsumer([]string{e.addr}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				pc, err := c.ConsumePartition("old-"+name, 0, sarama.OffsetOldest)
				if err != nil {
					t.Fatal(err)
				}
				defer pc.Close()
				for i := 0; i < n; i++ {
					select {
					case m := <-pc.Messages():
						wantKey := fmt.Sprintf("key-%d", i)
						if i%3 == 0 {
							wantKey = ""
						}
						wantValue := fmt.Sprintf("%s-value-%d", name, i)
						if i%50 == 49 {
							wantValue = ""
						}
						if m.Offset != int64(i) || string(m.Key) != wantKey || string(m.Value) != wantValue {
							t.Fatalf("message %d: offset %d key %q value %q", i, m.Offset, m.Key, m.Value)
						}
						if (wantKey == "") != (m.Key == nil) || (wantValue == "") != (m.Value == nil) {
							t.Fatalf("message %d: key %v value %v: null expected for empty", i, m.Key, m.Value)
						}
						wantTs := time.Time{}
						if v.IsAtLeast(sarama.V0_10_0_0) {
							wantTs = base.Add(time.Duration(i) * time.Millisecond)
						}
						if !m.Timestamp.Equal(wantTs) {
							t.Fatalf("message %d: timestamp %v, want %v", i, m.Timestamp, wantTs)
						}
						if len(m.Headers) != 0 {
							t.Fatalf("message %d: headers %v", i, m.Headers)
						}
						consumed++
					case err := <-pc.Errors():
						t.Fatalf("consume: %v", err)
					case <-ctx.Done():
						t.Fatalf("timed out at message %d", i)
					}
				}
			})
		}
	}
	// Every message consumed was converted (some more than once: cut at a response's end).
	if after := e.apis.Conversions.Snapshot(); after.FetchMessages-before.FetchMessages < consumed || consumed == 0 ||
		after.FetchRequests <= before.FetchRequests {
		t.Fatalf("%d messages converted for %d consumed", after.FetchMessages-before.FetchMessages, consumed)
	}
}

// TestFetchDownConversionConfig: on a whole broker (ZooKeeper, controller), the broker's
// log.message.downconversion.enable=false refuses old fetches with UNSUPPORTED_VERSION
// unless the topic's message.downconversion.enable says otherwise, also when changed live.
func TestFetchDownConversionConfig(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, testChroot(t), map[string]string{"log.message.downconversion.enable": "false",
		"num.partitions": "1", "controlled.shutdown.enable": "false"})
	waitController(t, b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	on := "true"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "dc-off"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.downconversion.enable": &on}, "dc-on"); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"dc-off", "dc-on"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte(topic)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", topic, err)
		}
	}
	conn := adminDial(t, b.Addr("PLAINTEXT"))
	fetch := func(topic string, v int16) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MinBytes = -1, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return conn.request(req, v).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}
	if p := fetch("dc-off", 3); p.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("dc-off v3: error %d", p.ErrorCode)
	}
	if p := fetch("dc-off", 4); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("dc-off v4: error %d", p.ErrorCode)
	}
	if p := fetch("dc-on", 1); p.ErrorCode != 0 {
		t.Fatalf("dc-on v1: error %d", p.ErrorCode)
	} else if got, _ := decodeLegacySet(t, p.RecordBatches); len(got) != 1 || got[0].Magic != 0 || string(got[0].Value) != "dc-on" {
		t.Fatalf("dc-on v1: %+v", got)
	}
	// Turned on for dc-off at runtime (IncrementalAlterConfigs), as the topic config handler applies it.
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "message.downconversion.enable", Value: &on}}, "dc-off")
	if err == nil {
		err = resps[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	adminWaitFor(t, 10*time.Second, "dc-off to serve v3", func() bool { return fetch("dc-off", 3).ErrorCode == 0 })
	if got, _ := decodeLegacySet(t, fetch("dc-off", 3).RecordBatches); len(got) != 1 || got[0].Magic != 1 || string(got[0].Value) != "dc-off" {
		t.Fatalf("dc-off v3: %+v", got)
	}
}

// TestFetchDownConvertKcat: librdkafka (kcat) without ApiVersions, falling back to 0.8.2
// (Fetch v0) and 0.9.0 (Fetch v1), reads magic 0 message sets down-converted from what kgo
// produced with each codec, LZ4 frames with the descriptor checksum of KAFKA-3160 included.
func TestFetchDownConvertKcat(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: apt-get install -y kcat")
	}
	e := newDataEnv(t)
	codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression()}
	for name := range codecs {
		e.createTopic("kcat-old-"+name, 1)
	}
	e.serve()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 50
	for name, codec := range codecs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(20*time.Millisecond),
			kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			cl.Produce(ctx, &kgo.Record{Topic: "kcat-old-" + name, Key: []byte(fmt.Sprintf("k%d", i)),
				Value: []byte(fmt.Sprintf("%s-%d", name, i))}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}
	for _, fb := range []string{"0.8.2", "0.9.0"} {
		for name := range codecs {
			topic := "kcat-old-" + name
			before := e.apis.Conversions.Snapshot().FetchMessages
			cmd := exec.CommandContext(ctx, kcat, "-C", "-b", e.addr, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
				"-f", "%o:%k:%s\n", "-X", "api.version.request=false", "-X", "broker.version.fallback="+fb, "-X", "fetch.wait.max.ms=20")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s fallback %s: kcat: %v\n%s", topic, fb, err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != n {
				t.Fatalf("%s fallback %s: %d lines:\n%s", topic, fb, len(lines), out)
			}
			for i, l := range lines {
				if want := fmt.Sprintf("%d:k%d:%s-%d", i, i, name, i); l != want {
					t.Fatalf("%s fallback %s: line %d %q, want %q", topic, fb, i, l, want)
				}
			}
			if got := e.apis.Conversions.Snapshot().FetchMessages - before; got < n {
				t.Fatalf("%s fallback %s: %d messages down-converted", topic, fb, got)
			}
		}
	}
}
