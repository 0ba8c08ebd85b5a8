package integration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var kgoCodecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// TestFranzGo is TestSarama with franz-go's kgo: acks=1, idempotence off (producer ids are
// a later issue).
func TestFranzGo(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 3})
	t.Run("async", func(t *testing.T) {
		topic := "kgo-async"
		createTopic(t, c, topic, testPartitions, 1, nil)
		start := time.Now()
		sent := kgoProduce(t, c, topic, asyncRecords, kgo.NoCompression(), false)
		produced := time.Since(start)
		got := kgoConsume(t, c, topic, len(sent))
		t.Logf("%d records: produced in %v, consumed in %v", len(sent), produced.Round(time.Millisecond), (time.Since(start) - produced).Round(time.Millisecond))
		checkRecords(t, sent, got)
	})
	t.Run("sync", func(t *testing.T) {
		topic := "kgo-sync"
		createTopic(t, c, topic, testPartitions, 1, nil)
		sent := kgoProduce(t, c, topic, syncRecords, kgo.NoCompression(), true)
		checkRecords(t, sent, kgoConsume(t, c, topic, len(sent)))
	})
	for _, codec := range kgoCodecs {
		t.Run("codec="+codec.name, func(t *testing.T) {
			topic := "kgo-" + codec.name
			createTopic(t, c, topic, testPartitions, 1, nil)
			sent := kgoProduce(t, c, topic, codecRecords, codec.codec, false)
			checkRecords(t, sent, kgoConsume(t, c, topic, len(sent)))
		})
	}
}

// kgoProduce produces n test records with acks=1, one at a time when oneByOne.
func kgoProduce(t testing.TB, c *Cluster, topic string, n int, codec kgo.CompressionCodec, oneByOne bool) []record {
	return kgoProduceFrom(t, c, topic, 0, n, codec, oneByOne)
}

// kgoProduceFrom produces test records first..first+n-1 with acks=1, idempotence off.
func kgoProduceFrom(t testing.TB, c *Cluster, topic string, first, n int, codec kgo.CompressionCodec, oneByOne bool) []record {
	t.Helper()
	return kgoProduceWith(t, c, topic, first, n, oneByOne, nil,
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(codec))
}

// kgoProduceWith produces test records first..first+n-1 through a kgo client with opts
// (on top of the seed brokers, topic and test logger), one at a time when oneByOne; check,
// if set, vets each acknowledged record. Every record must be acknowledged and pass.
func kgoProduceWith(t testing.TB, c *Cluster, topic string, first, n int, oneByOne bool, check func(*kgo.Record) error, opts ...kgo.Opt) []record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.DefaultProduceTopic(topic),
		kgo.WithLogger(kgoTestLogger(t)),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := time.Now()
	sent := make([]record, n)
	var (
		mu   sync.Mutex
		errs []error
	)
	for i := range n {
		sent[i] = testRecord("kgo", first+i, base)
		r := &kgo.Record{Key: sent[i].Key, Value: sent[i].Value, Timestamp: sent[i].Timestamp}
		for _, h := range sent[i].Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: []byte(h.Value)})
		}
		if oneByOne {
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("kgo: produce record %d: %v", i, err)
			}
			if check != nil {
				if err := check(r); err != nil {
					t.Fatalf("kgo: record %d: %v", i, err)
				}
			}
			sent[i].Partition, sent[i].Offset = r.Partition, r.Offset
			continue
		}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err == nil && check != nil {
				err = check(r)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			sent[i].Partition, sent[i].Offset = r.Partition, r.Offset // callbacks run serially
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("kgo: flush: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("kgo: %d of %d records failed; first: %v", len(errs), n, errs[0])
	}
	return sent
}

// kgoConsume reads the topic from the start (no group) until it has n records.
func kgoConsume(t testing.TB, c *Cluster, topic string, n int) []record {
	t.Helper()
	got, _ := kgoConsumeWithProducerIDs(t, c, topic, n)
	return got
}

// kgoConsumeWithProducerIDs is kgoConsume that also collects the batches' producer ids.
func kgoConsumeWithProducerIDs(t testing.TB, c *Cluster, topic string, n int) ([]record, map[int64]bool) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.WithLogger(kgoTestLogger(t)),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := map[int64]bool{}
	var got []record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("kgo: consumed %d of %d records after 2m", len(got), n)
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("kgo: fetch %s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			g := record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			for _, h := range r.Headers {
				g.Headers = append(g.Headers, header{h.Key, string(h.Value)})
			}
			got = append(got, g)
			ids[r.ProducerID] = true
		})
	}
	return got, ids
}
