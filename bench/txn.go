package main

// The transaction rows (issue 13): in the same run and on the same broker, an idempotent
// producer against a transactional one committing every 1,000 and every 10,000 records
// (100-byte records, one partition), and a read_uncommitted against a read_committed consumer
// of the topic the 1,000-record transactions wrote. renderTxnRatios prints the ratios.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	txnIdemRow = "txn produce kgo 100B 1p idempotent"
	txnRCRow   = "txn consume kgo 100B 1p read_committed"
	txnRURow   = "txn consume kgo 100B 1p read_uncommitted"
)

var txnSizes = []int64{1000, 10000}

func txnProduceRow(size int64) string { return fmt.Sprintf("txn produce kgo 100B 1p txn=%d", size) }

// txnWorkloads are the transaction rows, on the single samsa broker and on kfake.
func txnWorkloads(o options) []workload {
	ws := []workload{{name: txnIdemRow, kind: "produce-kgo-idem", size: 100, parts: 1, allAcks: true, records: o.small}}
	for _, ts := range txnSizes {
		ws = append(ws, workload{name: txnProduceRow(ts), kind: "produce-kgo-txn", size: 100, parts: 1, allAcks: true,
			records: o.small, txnSize: ts})
	}
	ws = append(ws,
		workload{name: txnRURow, kind: "consume-kgo", size: 100, parts: 1, records: o.small, consumes: txnProduceRow(1000)},
		workload{name: txnRCRow, kind: "consume-kgo", size: 100, parts: 1, records: o.small, consumes: txnProduceRow(1000), readCommitted: true},
	)
	return ws
}

// produceKgoIdempotent is produceKgo with kgo's idempotent producer (acks=all, linger 0, no
// compression; kgo itself sets the requests in flight of an idempotent producer, up to 5):
// the baseline of the transactional rows.
func produceKgoIdempotent(ctx context.Context, seeds []string, topic string, n int64, size int) (result, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), compressionOpt(""))
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warmup")}).FirstErr(); err != nil {
		return result{}, fmt.Errorf("kgo warmup produce: %w", err)
	}
	return produceTimed(ctx, cl, n, size, 0)
}

// produceKgoTxn is produceKgoIdempotent with a transactional id: a transaction per txnSize
// records, each ended by Flush and EndTransaction(commit), all inside the timed part.
func produceKgoTxn(ctx context.Context, seeds []string, topic string, n int64, size int, txnSize int64, txnID string) (result, error) {
	calls := &txnCalls{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.TransactionalID(txnID),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), compressionOpt(""), kgo.WithHooks(calls))
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	// Warm up: InitProducerId, FindCoordinator and the first AddPartitionsToTxn.
	if err := cl.BeginTransaction(); err != nil {
		return result{}, err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warmup")}).FirstErr(); err != nil {
		return result{}, fmt.Errorf("kgo warmup produce: %w", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return result{}, fmt.Errorf("kgo warmup commit: %w", err)
	}
	calls.reset()
	r, err := produceTimed(ctx, cl, n, size, txnSize)
	if err == nil {
		r.note = "; " + calls.String((n+txnSize-1)/txnSize)
	}
	return r, err
}

// txnCalls is a kgo hook that adds up the transaction requests' round trips, so the
// progress line says where a transaction's fixed cost goes.
type txnCalls struct {
	mu    sync.Mutex
	count map[int16]int
	total map[int16]time.Duration
}

func (c *txnCalls) reset() {
	c.mu.Lock()
	c.count, c.total = map[int16]int{}, map[int16]time.Duration{}
	c.mu.Unlock()
}

func (c *txnCalls) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count == nil {
		return
	}
	c.count[key]++
	c.total[key] += e2e.DurationE2E()
}

// String: per transaction, the calls and round-trip time of FindCoordinator (10),
// AddPartitionsToTxn (24) and EndTxn (26).
func (c *txnCalls) String(txns int64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, k := range []struct {
		key  int16
		name string
	}{{10, "FindCoordinator"}, {24, "AddPartitionsToTxn"}, {26, "EndTxn"}} {
		parts = append(parts, fmt.Sprintf("%s %.2f calls %.2f ms", k.name,
			float64(c.count[k.key])/float64(txns), float64(c.total[k.key])/float64(txns)/1e6))
	}
	return "per transaction: " + strings.Join(parts, ", ")
}

// produceTimed sends n records through cl, in transactions of txnSize records when
// txnSize > 0, and reports send→ack latency per record.
func produceTimed(ctx context.Context, cl *kgo.Client, n int64, size int, txnSize int64) (result, error) {
	vals := payloads(size)
	var lat latencies
	lat.d = make([]time.Duration, 0, n)
	var firstErr atomic.Value
	start := time.Now()
	for i := int64(0); i < n; i++ {
		if txnSize > 0 && i%txnSize == 0 {
			if err := cl.BeginTransaction(); err != nil {
				return result{}, fmt.Errorf("begin transaction: %w", err)
			}
		}
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: vals[i%64]}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			lat.add(time.Since(sent))
		})
		if (txnSize > 0 && (i+1)%txnSize == 0) || i == n-1 {
			if err := cl.Flush(ctx); err != nil {
				return result{}, err
			}
			if txnSize > 0 {
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					return result{}, fmt.Errorf("commit: %w", err)
				}
			}
		}
	}
	elapsed := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return result{}, fmt.Errorf("kgo produce: %w", err)
	}
	return result{records: n, bytes: n * int64(size), elapsed: elapsed, p50: lat.pct(0.5), p99: lat.pct(0.99)}, nil
}

// renderTxnRatios prints, per broker, transactional ÷ idempotent produce and
// read_committed ÷ read_uncommitted consume (medians of the rounds).
func renderTxnRatios(ws []workload, res results) string {
	has := map[string]bool{}
	for _, w := range ws {
		has[w.name] = true
	}
	if !has[txnIdemRow] {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nTransactions (same run, same broker; medians of the rounds):\n\n")
	b.WriteString("| ratio | samsa rec/s | samsa CPU s/M | kfake rec/s | kfake CPU s/M |\n|---|---:|---:|---:|---:|\n")
	row := func(label, num, den string) {
		if !has[num] || !has[den] {
			return
		}
		fmt.Fprintf(&b, "| %s |", label)
		for _, tn := range []string{"samsa", "kfake"} {
			n, d := reduce(res[num][tn]), reduce(res[den][tn])
			if n.n == 0 || d.n == 0 || d.recs[0] == 0 {
				b.WriteString(" n/a | n/a |")
				continue
			}
			cpu := "n/a"
			if d.cpu[0] > 0 {
				cpu = fmt.Sprintf("%.2f", n.cpu[0]/d.cpu[0])
			}
			fmt.Fprintf(&b, " %.2f | %s |", n.recs[0]/d.recs[0], cpu)
		}
		b.WriteString("\n")
	}
	for _, ts := range txnSizes {
		row(fmt.Sprintf("transactional (%d records per transaction) ÷ idempotent produce", ts), txnProduceRow(ts), txnIdemRow)
	}
	row("read_committed ÷ read_uncommitted consume (topic of the 1,000-record transactions)", txnRCRow, txnRURow)
	return b.String()
}
