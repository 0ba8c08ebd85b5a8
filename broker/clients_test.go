package broker

// Quick end-to-end checks of the data path with real clients (kgo, sarama) against one
// in-process SocketServer and a synthetic metadata cache. The cluster-level tests with
// ZooKeeper and several brokers are in integration/.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKgoProduceConsume(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("kgo", 3)
	e.serve()

	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.ConsumeTopics("kgo"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const n = 1000
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: "kgo", Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := 0
	last := map[int32]int64{}
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if prev, ok := last[r.Partition]; ok && r.Offset != prev+1 {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, prev)
			}
			last[r.Partition] = r.Offset
			if len(r.Headers) != 1 || r.Headers[0].Key != "h" {
				t.Fatalf("headers %v", r.Headers)
			}
			got++
		})
	}
}

func TestSaramaProduceConsume(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("sarama", 2)
	e.serve()

	for _, v := range []sarama.KafkaVersion{sarama.V3_7_0_0, sarama.NewConfig().Version, sarama.V0_11_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			cfg := sarama.NewConfig()
			cfg.Version = v
			cfg.Producer.Return.Successes = true
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
			client, err := sarama.NewClient([]string{e.addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			p, err := sarama.NewSyncProducerFromClient(client)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			start, err := client.GetOffset("sarama", 1, sarama.OffsetNewest)
			if err != nil {
				t.Fatal(err)
			}
			const n = 50
			for i := 0; i < n; i++ {
				part, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: "sarama", Partition: 1,
					Key: sarama.StringEncoder("k"), Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))})
				if err != nil || part != 1 || off != start+int64(i) {
					t.Fatalf("send %d: partition %d offset %d err %v", i, part, off, err)
				}
			}
			c, err := sarama.NewConsumerFromClient(client)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			pc, err := c.ConsumePartition("sarama", 1, start)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			for i := 0; i < n; i++ {
				select {
				case m := <-pc.Messages():
					if m.Offset != start+int64(i) || string(m.Value) != fmt.Sprintf("v%d", i) || string(m.Key) != "k" {
						t.Fatalf("message %d: offset %d value %q", i, m.Offset, m.Value)
					}
				case err := <-pc.Errors():
					t.Fatalf("consume: %v", err)
				case <-time.After(10 * time.Second):
					t.Fatalf("timed out at message %d", i)
				}
			}
		})
	}
}

// TestKgoAutoCreateOnRealBroker runs the data path behind a whole broker (ZooKeeper,
// controller, LeaderAndIsr/UpdateMetadata from it): kgo auto-creates a topic through
// Metadata, produces with acks=all and reads everything back.
func TestKgoAutoCreateOnRealBroker(t *testing.T) {
	b := startTestBroker(t, testChroot(t), map[string]string{"num.partitions": "2", "controlled.shutdown.enable": "false"})
	waitController(t, b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")), kgo.DisableIdempotentWrite(), kgo.AllowAutoTopicCreation(),
		kgo.DefaultProduceTopic("auto-kgo"), kgo.ConsumeTopics("auto-kgo"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 200
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
}
