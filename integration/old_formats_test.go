package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaVersions are the client versions whose protocols differ in what the broker must
// convert: 0.8.2 speaks Produce v0 / Fetch v0 (message format v0, no timestamps), 0.10.2
// Produce v2 / Fetch v3 (format v1, timestamps), 0.11 and later record batches (format v2,
// headers).
var saramaVersions = []struct {
	name string
	v    sarama.KafkaVersion
}{
	{"V0_8_2_0", sarama.V0_8_2_0},
	{"V0_10_2_0", sarama.V0_10_2_0},
	{"V0_11_0_0", sarama.V0_11_0_0},
	{"V1_0_0_0", sarama.V1_0_0_0},
	{"V2_0_0_0", sarama.V2_0_0_0},
	{"V2_8_0_0", sarama.V2_8_0_0},
	{"V3_7_0_0", sarama.V3_7_0_0},
}

// codecsFor lists the codecs a sarama version may produce with: LZ4 came with 0.10, zstd
// with 2.1 (KIP-110).
func codecsFor(v sarama.KafkaVersion) []sarama.CompressionCodec {
	cs := []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy}
	if v.IsAtLeast(sarama.V0_10_0_0) {
		cs = append(cs, sarama.CompressionLZ4)
	}
	if v.IsAtLeast(sarama.V2_1_0_0) {
		cs = append(cs, sarama.CompressionZSTD)
	}
	return cs
}

// TestSaramaMessageFormats produces with sarama pinned to each version and codec, then reads
// every topic back with sarama pinned to each version: old producers' message sets are
// converted to record batches on the leader, and record batches are down-converted for old
// consumers. Keys and values always survive; timestamps where both sides' formats have them
// (v1+), headers where both have record batches. A consumer reads only the codecs its
// version knows.
func TestSaramaMessageFormats(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 1})
	const n = 120 // records per topic: several compressed batches per partition
	type produced struct {
		topic   string
		version sarama.KafkaVersion
		codec   sarama.CompressionCodec
		sent    []record
	}
	var topics []produced
	for _, pv := range saramaVersions {
		for _, codec := range codecsFor(pv.v) {
			topic := fmt.Sprintf("formats-%s-%s", pv.name, codec)
			createTopic(t, c, topic, 2, 1, nil)
			cfg := saramaFormatConfig(t, pv.v)
			cfg.Producer.Compression = codec
			cfg.Producer.Flush.Messages = 20 // several records per message set / batch
			cfg.Producer.Flush.Frequency = 20 * time.Millisecond
			if !pv.v.IsAtLeast(sarama.V0_11_0_0) {
				cfg.Producer.Idempotent = false
			}
			sent := saramaProduceFormat(t, c, cfg, topic, n)
			topics = append(topics, produced{topic, pv.v, codec, sent})
		}
	}
	for _, cv := range saramaVersions {
		t.Run("consumer="+cv.name, func(t *testing.T) {
			for _, p := range topics {
				if !slices.Contains(codecsFor(cv.v), p.codec) {
					// As from Kafka: an lz4 batch down-converted to magic 0 carries the
					// broken frame checksum of Kafka 0.8 (KAFKA-3160), which sarama cannot
					// read below 0.10, and zstd is refused below Fetch v10.
					continue
				}
				want := make([]record, len(p.sent))
				for i, r := range p.sent {
					if !p.version.IsAtLeast(sarama.V0_11_0_0) || !cv.v.IsAtLeast(sarama.V0_11_0_0) {
						r.Headers = nil
					}
					if !p.version.IsAtLeast(sarama.V0_10_0_0) || !cv.v.IsAtLeast(sarama.V0_10_0_0) {
						r.Timestamp = time.Time{} // not compared
					}
					want[i] = r
				}
				got := saramaConsume(t, c, saramaFormatConfig(t, cv.v), p.topic, countsByPartition(want))
				if !cv.v.IsAtLeast(sarama.V0_10_0_0) || !p.version.IsAtLeast(sarama.V0_10_0_0) {
					for i := range got {
						got[i].Timestamp = time.Time{}
					}
				}
				t.Logf("%s: %d records", p.topic, len(got))
				checkRecords(t, want, got)
			}
		})
	}
}

func saramaFormatConfig(t *testing.T, v sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.ClientID = "samsa-it-formats"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Consumer.Return.Errors = true
	// Closing a partition consumer waits for its fetch in flight: keep that short.
	cfg.Consumer.MaxWaitTime = 20 * time.Millisecond
	if err := cfg.Validate(); err != nil {
		t.Fatalf("sarama config for %s: %v", v, err)
	}
	return cfg
}

// saramaProduceFormat sends n test records through an async producer, without headers
// before 0.11 (sarama refuses them) and without timestamps before 0.10 (format v0 has none).
func saramaProduceFormat(t *testing.T, c *Cluster, cfg *sarama.Config, topic string, n int) []record {
	t.Helper()
	p, err := sarama.NewAsyncProducer(c.Bootstrap(), cfg)
	if err != nil {
		t.Fatalf("sarama %s producer: %v", cfg.Version, err)
	}
	defer p.Close()
	base := time.Now()
	sent := make([]record, n)
	for i := range n {
		sent[i] = testRecord("sarama-"+cfg.Version.String(), i, base)
		if !cfg.Version.IsAtLeast(sarama.V0_11_0_0) {
			sent[i].Headers = nil
		}
		if !cfg.Version.IsAtLeast(sarama.V0_10_0_0) {
			sent[i].Timestamp = time.Time{}
		}
		p.Input() <- saramaMessage(topic, sent[i], i)
	}
	timeout := time.After(time.Minute)
	for done := 0; done < n; done++ {
		select {
		case m := <-p.Successes():
			i := m.Metadata.(int)
			sent[i].Partition, sent[i].Offset = m.Partition, m.Offset
		case e := <-p.Errors():
			t.Fatalf("sarama %s produce to %s: %v", cfg.Version, topic, e)
		case <-timeout:
			t.Fatalf("sarama %s: %d of %d records acknowledged after 1m", cfg.Version, done, n)
		}
	}
	return sent
}
