package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// result is one workload's measurement against one target in one round.
type result struct {
	records  int64
	bytes    int64
	elapsed  time.Duration
	cpu      float64 // broker CPU seconds during the workload
	p50, p99 time.Duration
	na       string // why the row could not be measured
	note     string // extra detail for the progress line (consume: fetch statistics)
}

func (r result) recsPerSec() float64 { return float64(r.records) / r.elapsed.Seconds() }
func (r result) mbPerSec() float64   { return float64(r.bytes) / (1 << 20) / r.elapsed.Seconds() }
func (r result) cpuPerM() float64    { return r.cpu / float64(r.records) * 1e6 }

// latencies collects per-record latencies; safe for concurrent use.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }

func (l *latencies) pct(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	return l.d[min(int(p*float64(len(l.d))), len(l.d)-1)]
}

func payloads(size int) [][]byte {
	r := rand.New(rand.NewSource(1))
	out := make([][]byte, 64)
	for i := range out {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(r.Intn(26) + 65)
		}
		out[i] = b
	}
	return out
}

// produceKgo sends n records of size bytes with a kgo producer (5 requests in flight per
// broker, idempotence off, linger 0) and reports send→ack latency per record.
func produceKgo(ctx context.Context, seeds []string, topic string, n int64, size int, allAcks bool, codec string) (result, error) {
	acks := kgo.LeaderAck()
	if allAcks {
		acks = kgo.AllISRAcks()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5),
		kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), compressionOpt(codec))
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	// Warm the metadata so the timed part is only produce.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warmup")}).FirstErr(); err != nil {
		return result{}, fmt.Errorf("kgo warmup produce: %w", err)
	}
	vals := payloads(size)
	var lat latencies
	lat.d = make([]time.Duration, 0, n)
	var firstErr atomic.Value
	start := time.Now()
	for i := int64(0); i < n; i++ {
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: vals[i%64]}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			lat.add(time.Since(sent))
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return result{}, err
	}
	elapsed := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return result{}, fmt.Errorf("kgo produce: %w", err)
	}
	return result{records: n, bytes: n * int64(size), elapsed: elapsed, p50: lat.pct(0.5), p99: lat.pct(0.99)}, nil
}

// produceSarama sends n records with sarama's AsyncProducer (5 requests in flight, no flush
// timer: sarama's defaults) and reports send→ack latency.
func produceSarama(ctx context.Context, seeds []string, topic string, n int64, size int, allAcks bool) (result, error) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "bench-sarama"
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.RequiredAcks = sarama.WaitForLocal
	if allAcks {
		cfg.Producer.RequiredAcks = sarama.WaitForAll
	}
	cfg.Producer.Partitioner = sarama.NewRoundRobinPartitioner
	cfg.Producer.MaxMessageBytes = max(cfg.Producer.MaxMessageBytes, size*2)
	cfg.Net.MaxOpenRequests = 5
	cfg.Metadata.Full = false
	p, err := sarama.NewAsyncProducer(seeds, cfg)
	if err != nil {
		return result{}, fmt.Errorf("sarama producer: %w", err)
	}
	vals := payloads(size)
	var lat latencies
	lat.d = make([]time.Duration, 0, n)
	var wg sync.WaitGroup
	var acked atomic.Int64
	var firstErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m := range p.Successes() {
			lat.add(time.Since(m.Metadata.(time.Time)))
			acked.Add(1)
		}
	}()
	go func() {
		defer wg.Done()
		for e := range p.Errors() {
			if firstErr == nil {
				firstErr = e.Err
			}
		}
	}()
	start := time.Now()
	for i := int64(0); i < n; i++ {
		select {
		case p.Input() <- &sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(vals[i%64]), Metadata: time.Now()}:
		case <-ctx.Done():
			p.AsyncClose()
			wg.Wait()
			return result{}, ctx.Err()
		}
	}
	p.AsyncClose() // flushes what is buffered, then closes Successes and Errors
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return result{}, fmt.Errorf("sarama produce: %w", firstErr)
	}
	if acked.Load() != n {
		return result{}, fmt.Errorf("sarama: %d of %d acknowledged", acked.Load(), n)
	}
	return result{records: n, bytes: n * int64(size), elapsed: elapsed, p50: lat.pct(0.5), p99: lat.pct(0.99)}, nil
}

// consumeKgo reads n records from every partition of topic, from the start, with a kgo
// direct (groupless) consumer and Java's fetch.max.wait.ms.
func consumeKgo(ctx context.Context, seeds []string, topic string, partitions int32, n int64) (result, error) {
	return consumeKgoIsolation(ctx, seeds, topic, partitions, n, false)
}

// consumeKgoIsolation is consumeKgo at isolation level read_committed when readCommitted
// (the fetches stop at the last stable offset and carry the aborted transactions).
func consumeKgoIsolation(ctx context.Context, seeds []string, topic string, partitions int32, n int64, readCommitted bool) (result, error) {
	offs := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		offs[p] = kgo.NewOffset().AtStart()
	}
	iso := kgo.ReadUncommitted()
	if readCommitted {
		iso = kgo.ReadCommitted()
	}
	stats := new(fetchStats)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.FetchIsolationLevel(iso), kgo.WithHooks(stats))
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	var got, bytes int64
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return result{}, fmt.Errorf("consume %s: %d of %d records: %w", topic, got, n, err)
		}
		for _, fe := range fs.Errors() {
			return result{}, fmt.Errorf("consume %s-%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "warmup" {
				return
			}
			got++
			bytes += int64(len(r.Value) + len(r.Key))
		})
	}
	return result{records: got, bytes: bytes, elapsed: time.Since(start), note: "; " + stats.String()}, nil
}

// endToEnd produces 100-byte records at rate records/s for d with kgo and measures, in a
// consumer in the same process, the time from Produce to the record arriving.
func endToEnd(ctx context.Context, seeds []string, topic string, rate int, d time.Duration, allAcks bool) (result, error) {
	acks := kgo.LeaderAck()
	if allAcks {
		acks = kgo.AllISRAcks()
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(acks),
		kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5), kgo.ProducerLinger(0), compressionOpt(""))
	if err != nil {
		return result{}, err
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return result{}, err
	}
	defer cons.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("warmup")}).FirstErr(); err != nil {
		return result{}, fmt.Errorf("e2e warmup: %w", err)
	}
	base := time.Now()
	n := int64(rate) * int64(d/time.Second)
	var lat latencies
	lat.d = make([]time.Duration, 0, n)
	cctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	consumed := make(chan error, 1)
	go func() {
		var got int64
		for got < n {
			fs := cons.PollFetches(cctx)
			if err := cctx.Err(); err != nil {
				consumed <- fmt.Errorf("e2e consumer: %d of %d: %w", got, n, err)
				return
			}
			now := time.Since(base)
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) < 8 || string(r.Value) == "warmup" {
					return
				}
				got++
				lat.add(now - time.Duration(binary.BigEndian.Uint64(r.Value)))
			})
		}
		consumed <- nil
	}()
	interval := time.Second / time.Duration(rate)
	var firstErr atomic.Value
	for i := int64(0); i < n; i++ {
		// Pace like a fixed-rate source: record i is due at i*interval.
		if ahead := time.Duration(i)*interval - time.Since(base); ahead > time.Millisecond {
			time.Sleep(ahead)
		}
		v := make([]byte, 100)
		binary.BigEndian.PutUint64(v, uint64(time.Since(base)))
		prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		return result{}, err
	}
	if err, _ := firstErr.Load().(error); err != nil {
		return result{}, fmt.Errorf("e2e produce: %w", err)
	}
	if err := <-consumed; err != nil {
		return result{}, err
	}
	return result{records: n, bytes: n * 100, elapsed: time.Since(base), p50: lat.pct(0.5), p99: lat.pct(0.99)}, nil
}

// loopbackTCP measures one TCP stream over 127.0.0.1 moving total bytes in 1 MiB writes.
func loopbackTCP(total int64) (result, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(io.Discard, c)
		done <- err
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return result{}, err
	}
	buf := make([]byte, 1<<20)
	start := time.Now()
	for sent := int64(0); sent < total; sent += int64(len(buf)) {
		if _, err := c.Write(buf); err != nil {
			c.Close()
			return result{}, err
		}
	}
	c.Close()
	if err := <-done; err != nil {
		return result{}, err
	}
	return result{records: total >> 20, bytes: total, elapsed: time.Since(start)}, nil
}

// fileWrite measures appending total bytes in 1 MiB writes to a new file in dir, without
// fsync (as a Kafka log append with the default flush settings), then with one fsync.
func fileWrite(dir string, total int64) (noSync, withSync result, err error) {
	path := filepath.Join(dir, "bench-file-write")
	defer os.Remove(path)
	f, err := os.Create(path)
	if err != nil {
		return result{}, result{}, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	rand.New(rand.NewSource(2)).Read(buf)
	start := time.Now()
	for w := int64(0); w < total; w += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			return result{}, result{}, err
		}
	}
	noSync = result{records: total >> 20, bytes: total, elapsed: time.Since(start)}
	if err := f.Sync(); err != nil {
		return result{}, result{}, errors.Join(err, f.Close())
	}
	withSync = result{records: total >> 20, bytes: total, elapsed: time.Since(start)}
	return noSync, withSync, nil
}

// compressionOpt is the kgo producer's codec: none unless a workload asks for snappy. kgo
// compresses with snappy by default, but the Java producer's compression.type (and so
// kafka-producer-perf-test's) defaults to none, as does sarama's.
func compressionOpt(codec string) kgo.ProducerOpt {
	if codec == "snappy" {
		return kgo.ProducerBatchCompression(kgo.SnappyCompression())
	}
	return kgo.ProducerBatchCompression(kgo.NoCompression())
}
