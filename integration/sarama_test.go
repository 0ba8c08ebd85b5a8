package integration

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Record counts from the issue: 100,000 through the AsyncProducer, 1,000 through the
// SyncProducer, 10,000 per codec; all acks=1 on replication-factor-1 topics.
const (
	asyncRecords = 100_000
	syncRecords  = 1_000
	codecRecords = 10_000
	// testPartitions spreads each topic over the three brokers (RF 1: leaders are spread).
	testPartitions = 6
)

var saramaCodecs = []struct {
	name  string
	codec sarama.CompressionCodec
}{
	{"none", sarama.CompressionNone},
	{"gzip", sarama.CompressionGZIP},
	{"snappy", sarama.CompressionSnappy},
	{"lz4", sarama.CompressionLZ4},
	{"zstd", sarama.CompressionZSTD},
}

// TestSarama produces with sarama (Config.Version 3.7 and sarama's default) and reads back
// with sarama's partition consumer.
func TestSarama(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3})
	for _, v := range []struct {
		name    string
		version *sarama.KafkaVersion
	}{
		{"V3_7_0_0", &sarama.V3_7_0_0},
		{"default", nil}, // sarama.DefaultVersion
	} {
		t.Run(v.name, func(t *testing.T) {
			cfg := func() *sarama.Config {
				cfg := sarama.NewConfig()
				if v.version != nil {
					cfg.Version = *v.version
				}
				cfg.ClientID = "samsa-it-" + t.Name()
				cfg.Producer.RequiredAcks = sarama.WaitForLocal
				cfg.Producer.Return.Successes = true
				cfg.Producer.Return.Errors = true
				cfg.Consumer.Return.Errors = true
				return cfg
			}
			t.Run("async", func(t *testing.T) {
				topic := "sarama-" + v.name + "-async"
				createTopic(t, c, topic, testPartitions, 1, nil)
				start := time.Now()
				sent := saramaProduceAsync(t, c, cfg(), topic, asyncRecords)
				produced := time.Since(start)
				got := saramaConsume(t, c, cfg(), topic, countsByPartition(sent))
				t.Logf("%d records: produced in %v, consumed in %v", len(sent), produced.Round(time.Millisecond), (time.Since(start) - produced).Round(time.Millisecond))
				checkRecords(t, sent, got)
			})
			t.Run("sync", func(t *testing.T) {
				topic := "sarama-" + v.name + "-sync"
				createTopic(t, c, topic, testPartitions, 1, nil)
				sent := saramaProduceSync(t, c, cfg(), topic, syncRecords)
				checkRecords(t, sent, saramaConsume(t, c, cfg(), topic, countsByPartition(sent)))
			})
			for _, codec := range saramaCodecs {
				t.Run("codec="+codec.name, func(t *testing.T) {
					topic := "sarama-" + v.name + "-" + codec.name
					createTopic(t, c, topic, testPartitions, 1, nil)
					pc := cfg()
					pc.Producer.Compression = codec.codec
					sent := saramaProduceAsync(t, c, pc, topic, codecRecords)
					checkRecords(t, sent, saramaConsume(t, c, cfg(), topic, countsByPartition(sent)))
				})
			}
		})
	}
}

func saramaMessage(topic string, r record, i int) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{
		Topic:     topic,
		Key:       sarama.ByteEncoder(r.Key),
		Value:     sarama.ByteEncoder(r.Value),
		Timestamp: r.Timestamp,
		Metadata:  i,
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)})
	}
	return m
}

func saramaProduceAsync(t *testing.T, c *Cluster, cfg *sarama.Config, topic string, n int) []record {
	t.Helper()
	p, err := sarama.NewAsyncProducer(c.Bootstrap(), cfg)
	if err != nil {
		t.Fatalf("sarama async producer: %v", err)
	}
	base := time.Now()
	sent := make([]record, n)
	go func() {
		for i := range n {
			sent[i] = testRecord("sarama", i, base)
			p.Input() <- saramaMessage(topic, sent[i], i)
		}
	}()
	timeout := time.After(3 * time.Minute)
	var errs []error
	for done := 0; done < n; done++ {
		select {
		case m := <-p.Successes():
			i := m.Metadata.(int)
			sent[i].Partition, sent[i].Offset = m.Partition, m.Offset
		case e := <-p.Errors():
			errs = append(errs, e)
		case <-timeout:
			// The feeder may still block on Input: leave the producer, the test is over.
			t.Fatalf("sarama: %d of %d records acknowledged after 3m", done, n)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("close producer: %v", err)
	}
	if len(errs) > 0 {
		t.Fatalf("sarama: %d of %d records failed; first: %v", len(errs), n, errs[0])
	}
	return sent
}

func saramaProduceSync(t *testing.T, c *Cluster, cfg *sarama.Config, topic string, n int) []record {
	t.Helper()
	p, err := sarama.NewSyncProducer(c.Bootstrap(), cfg)
	if err != nil {
		t.Fatalf("sarama sync producer: %v", err)
	}
	defer p.Close()
	base := time.Now()
	sent := make([]record, n)
	for i := range n {
		sent[i] = testRecord("sarama", i, base)
		part, off, err := p.SendMessage(saramaMessage(topic, sent[i], i))
		if err != nil {
			t.Fatalf("sarama: send record %d: %v", i, err)
		}
		sent[i].Partition, sent[i].Offset = part, off
	}
	return sent
}

// saramaConsume reads each partition from the oldest offset until it has want[p] records.
func saramaConsume(t *testing.T, c *Cluster, cfg *sarama.Config, topic string, want map[int32]int) []record {
	t.Helper()
	cons, err := sarama.NewConsumer(c.Bootstrap(), cfg)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	var (
		mu   sync.Mutex
		got  []record
		errs []error
		wg   sync.WaitGroup
	)
	for p, n := range want {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("consume %s-%d: %v", topic, p, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer pc.Close()
			var rs []record
			timeout := time.After(2 * time.Minute)
			for len(rs) < n {
				select {
				case m := <-pc.Messages():
					r := record{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp}
					for _, h := range m.Headers {
						r.Headers = append(r.Headers, header{string(h.Key), string(h.Value)})
					}
					rs = append(rs, r)
				case e := <-pc.Errors():
					mu.Lock()
					errs = append(errs, e)
					mu.Unlock()
				case <-timeout:
					mu.Lock()
					errs = append(errs, fmt.Errorf("partition %d: %d of %d records after 2m", p, len(rs), n))
					mu.Unlock()
					n = 0
				}
			}
			mu.Lock()
			got = append(got, rs...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, e := range errs {
		t.Errorf("sarama consumer: %v", e)
	}
	return got
}
