package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config is the workload of one `samsa chaos` run.
type Config struct {
	Bootstrap         []string
	Topic             string
	Partitions        int32 // for a topic the run creates; an existing topic keeps its count
	ReplicationFactor int16 // 3 unless set
	MinISR            int   // min.insync.replicas of a created topic: 2 unless set
	Producers         int   // idempotent producers (acks=all)
	Transactional     int   // transactional producers, committing and aborting
	Consumers         int   // members of the read_committed consumer group (2 unless set)
	Rate              int   // records per second per producer (100 unless set)
	Duration          time.Duration
	Seed              int64
	// DrainTimeout bounds each phase after the faults: in-flight acknowledgements, the end
	// markers, consumers catching up, the final read (60 s unless set).
	DrainTimeout time.Duration
	Log          *logrus.Entry
	// ClientOpts are added to every client the workload creates (TLS, SASL, a logger).
	ClientOpts []kgo.Opt
}

func (c *Config) defaults() {
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = 3
	}
	if c.MinISR == 0 {
		c.MinISR = 2
	}
	if c.Consumers == 0 {
		c.Consumers = 2
	}
	if c.Rate == 0 {
		c.Rate = 100
	}
	if c.Partitions == 0 {
		c.Partitions = 6
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 60 * time.Second
	}
	if c.Log == nil {
		c.Log = logrus.NewEntry(logrus.StandardLogger())
	}
}

// Run drives the workload for cfg.Duration while inj applies its faults, waits for the
// injector to undo them, writes an end marker to every partition, lets the consumers catch
// up, and reads every partition from offset 0 (read_committed) into History.Final. The
// history is returned even with an error (e.g. the cluster never came back).
func Run(ctx context.Context, cfg Config, inj Injector) (*History, error) {
	cfg.defaults()
	run := strconv.FormatInt(cfg.Seed, 36) + "-" + strconv.FormatInt(time.Now().UnixMilli()%(36*36*36*36*36), 36)
	h := NewHistory(run, cfg.Topic)
	h.Producers, h.TxnProds = cfg.Producers, cfg.Transactional
	log := cfg.Log.WithField("run", run)

	parts, err := ensureTopic(ctx, cfg)
	if err != nil {
		return h, err
	}
	log.WithFields(logrus.Fields{"topic": cfg.Topic, "partitions": parts}).Info("chaos workload starting")
	h.Start = time.Now() // the timeline starts with the workload (and the fault schedule)

	w := &workload{cfg: cfg, h: h, parts: parts, log: log, group: "samsa-chaos-" + run}
	stop := make(chan struct{})
	var prodWG, consWG sync.WaitGroup
	consumers := make([]*groupMember, cfg.Consumers)
	for i := range consumers {
		m, err := w.newMember(i)
		if err != nil {
			for _, prev := range consumers[:i] {
				prev.close()
			}
			return h, err
		}
		consumers[i] = m
		consWG.Add(1)
		go func() { defer consWG.Done(); m.poll() }()
	}
	pollCtx, stopPoll := context.WithCancel(context.Background())
	pollDone := make(chan struct{})
	go func() { defer close(pollDone); w.pollCommitted(pollCtx) }()

	for i := 0; i < cfg.Producers; i++ {
		prodWG.Add(1)
		go func() { defer prodWG.Done(); w.produceIdempotent(i, stop) }()
	}
	for i := 0; i < cfg.Transactional; i++ {
		prodWG.Add(1)
		go func() { defer prodWG.Done(); w.produceTransactional(cfg.Producers+i, stop) }()
	}

	faultCtx, stopFaults := context.WithTimeout(ctx, cfg.Duration)
	injDone := make(chan error, 1)
	go func() { injDone <- inj.Run(faultCtx) }()
	<-faultCtx.Done()
	close(stop)
	log.Info("workload stopping: waiting for in-flight records and for the faults to be undone")
	prodWG.Wait()
	injErr := <-injDone
	stopFaults()
	h.mu.Lock()
	h.Windows = inj.Windows()
	h.mu.Unlock()
	if errors.Is(injErr, context.Canceled) || errors.Is(injErr, context.DeadlineExceeded) {
		injErr = nil // the schedule's end
	}

	markers := w.writeEndMarkers()
	w.waitConsumers(markers, consumers)
	for _, m := range consumers {
		m.close()
	}
	consWG.Wait()
	stopPoll()
	<-pollDone
	w.finalRead(markers)
	h.mu.Lock()
	h.End = time.Now()
	h.Windows = inj.Windows()
	h.mu.Unlock()
	return h, injErr
}

// ensureTopic creates the topic (RF 3, min.insync.replicas 2 by default) or reads the
// partition count of the existing one.
func ensureTopic(ctx context.Context, cfg Config) (int32, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Bootstrap...)}, cfg.ClientOpts...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	minISR := strconv.Itoa(cfg.MinISR)
	for {
		resp, err := adm.CreateTopic(ctx, cfg.Partitions, cfg.ReplicationFactor, map[string]*string{"min.insync.replicas": &minISR}, cfg.Topic)
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) || errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			break
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("create topic %s: %w", cfg.Topic, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for {
		td, err := adm.ListTopics(ctx, cfg.Topic)
		if err == nil {
			t, ok := td[cfg.Topic]
			if ok && t.Err == nil && len(t.Partitions) > 0 && allLed(t) {
				return int32(len(t.Partitions)), nil
			}
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("topic %s has no leader for every partition: %v", cfg.Topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func allLed(t kadm.TopicDetail) bool {
	for _, p := range t.Partitions {
		if p.Leader < 0 || p.Err != nil {
			return false
		}
	}
	return true
}

type workload struct {
	cfg   Config
	h     *History
	parts int32
	log   *logrus.Entry
	group string
}

func (w *workload) opts(extra ...kgo.Opt) []kgo.Opt {
	o := []kgo.Opt{kgo.SeedBrokers(w.cfg.Bootstrap...)}
	o = append(o, w.cfg.ClientOpts...)
	return append(o, extra...)
}

func (w *workload) producerOpts(extra ...kgo.Opt) []kgo.Opt {
	return w.opts(append([]kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(30 * time.Second),
		kgo.ProducerLinger(2 * time.Millisecond),
		kgo.MaxBufferedRecords(1000),
		kgo.DefaultProduceTopic(w.cfg.Topic),
	}, extra...)...)
}

// rng is producer p's seeded random source: the same seed sends the same partitions and
// transaction sizes and outcomes.
func (w *workload) rng(p int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(w.cfg.Seed), uint64(p)+0x9e3779b97f4a7c15))
}

func (w *workload) record(v Value) *kgo.Record {
	return &kgo.Record{Topic: w.cfg.Topic, Partition: v.Partition, Key: []byte(v.Key()), Value: []byte(v.String())}
}

// produce sends one record and records its acknowledgement or error.
func (w *workload) produce(cl *kgo.Client, v Value, txn int64, done func(error)) {
	start := time.Now()
	cl.Produce(context.Background(), w.record(v), func(r *kgo.Record, err error) {
		now := time.Now()
		if err != nil {
			w.h.addError(ProduceError{Value: v, Time: now, Err: err.Error()})
		} else {
			w.h.addAck(Ack{Value: v, Offset: r.Offset, Time: now, Latency: now.Sub(start), Txn: txn})
		}
		if done != nil {
			done(err)
		}
	})
}

// pacer spaces a producer's records at cfg.Rate per second.
type pacer struct {
	every time.Duration
	next  time.Time
}

func newPacer(rate int) *pacer {
	return &pacer{every: time.Second / time.Duration(rate), next: time.Now()}
}

// wait sleeps until the next n records are due; false when stop closed.
func (p *pacer) wait(n int, stop <-chan struct{}) bool {
	p.next = p.next.Add(time.Duration(n) * p.every)
	d := time.Until(p.next)
	if d < -time.Second {
		p.next = time.Now() // fell behind (a blocked Produce): do not burst to catch up
	}
	if d <= 0 {
		select {
		case <-stop:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}

// produceIdempotent is one idempotent acks=all producer sending to random partitions until
// stop, then flushing what it has in flight.
func (w *workload) produceIdempotent(p int, stop <-chan struct{}) {
	cl, err := kgo.NewClient(w.producerOpts()...)
	if err != nil {
		w.h.addOtherError(fmt.Sprintf("producer %d", p), err)
		return
	}
	defer cl.Close()
	rng := w.rng(p)
	seqs := make([]int64, w.parts)
	pace := newPacer(w.cfg.Rate)
	for pace.wait(1, stop) {
		part := int32(rng.IntN(int(w.parts)))
		v := Value{Run: w.h.Run, Producer: p, Partition: part, Seq: seqs[part]}
		seqs[part]++
		w.produce(cl, v, -1, nil)
	}
	w.flush(cl, p)
}

func (w *workload) flush(cl *kgo.Client, p int) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.DrainTimeout)
	defer cancel()
	if err := cl.Flush(ctx); err != nil {
		w.log.WithError(err).WithField("producer", p).Warn("records still in flight at the end")
	}
}

// produceTransactional is one transactional producer: transactions of 1–8 records to random
// partitions, a quarter of them aborted (drawn from the seed), until stop.
func (w *workload) produceTransactional(p int, stop <-chan struct{}) {
	txnID := fmt.Sprintf("samsa-chaos-%s-%d", w.h.Run, p)
	newClient := func() (*kgo.Client, error) {
		return kgo.NewClient(w.producerOpts(kgo.TransactionalID(txnID), kgo.TransactionTimeout(10*time.Second))...)
	}
	cl, err := newClient()
	if err != nil {
		w.h.addOtherError(fmt.Sprintf("transactional producer %d", p), err)
		return
	}
	defer func() { cl.Close() }()
	rng := w.rng(p)
	seqs := make([]int64, w.parts)
	pace := newPacer(w.cfg.Rate)
	for num := int64(0); ; num++ {
		n := 1 + rng.IntN(8)
		abort := rng.IntN(4) == 0
		if !pace.wait(n, stop) {
			return
		}
		if err := cl.BeginTransaction(); err != nil {
			w.h.addOtherError(fmt.Sprintf("transactional producer %d: begin", p), err)
			cl.Close()
			if cl, err = newClient(); err != nil {
				return
			}
			continue
		}
		t := &Txn{Producer: p, Num: num, Start: time.Now()}
		for range n {
			part := int32(rng.IntN(int(w.parts)))
			v := Value{Run: w.h.Run, Producer: p, Partition: part, Seq: seqs[part]}
			seqs[part]++
			t.Records = append(t.Records, v)
		}
		w.h.addTxn(t)
		var failed atomic.Bool
		for _, v := range t.Records {
			w.produce(cl, v, num, func(err error) {
				if err != nil {
					failed.Store(true)
				}
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.DrainTimeout)
		ferr := cl.Flush(ctx)
		commit := !abort && ferr == nil && !failed.Load()
		try := kgo.TryAbort
		if commit {
			try = kgo.TryCommit
			w.h.mu.Lock()
			t.Ending = time.Now()
			w.h.mu.Unlock()
		}
		err := cl.EndTransaction(ctx, try)
		cancel()
		switch {
		case err == nil && commit:
			w.h.endTxn(t, TxnCommitted, nil)
		case err == nil:
			w.h.endTxn(t, TxnAborted, ferr)
		default:
			// The outcome is unknowable (kgo: retry with TryAbort); a new client with the same
			// transactional id fences this one and aborts whatever it left open.
			w.h.endTxn(t, TxnUnknown, err)
			cl.Close()
			if cl, err = newClient(); err != nil {
				w.h.addOtherError(fmt.Sprintf("transactional producer %d", p), err)
				return
			}
		}
	}
}

// writeEndMarkers appends one record to every partition after the workload: the final read
// and the consumers are done with a partition once they read its marker. A partition whose
// marker cannot be written has no entry.
func (w *workload) writeEndMarkers() map[int32]int64 {
	out := map[int32]int64{}
	cl, err := kgo.NewClient(w.producerOpts()...)
	if err != nil {
		w.h.addOtherError("end markers", err)
		return out
	}
	defer cl.Close()
	deadline := time.Now().Add(w.cfg.DrainTimeout)
	for p := int32(0); p < w.parts; p++ {
		v := Value{Run: w.h.Run, Producer: EndMarkerProducer, Partition: p, Seq: 0}
		for {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			r, err := cl.ProduceSync(ctx, w.record(v)).First()
			cancel()
			if err == nil {
				out[p] = r.Offset
				break
			}
			if time.Now().After(deadline) {
				w.h.mu.Lock()
				w.h.FinalErr[p] = "no end marker could be written: " + err.Error()
				w.h.mu.Unlock()
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return out
}

// finalRead reads every partition from offset 0 with read_committed up to its end marker:
// the ground truth the checker compares acknowledgements and consumed records with.
func (w *workload) finalRead(markers map[int32]int64) {
	start := map[string]map[int32]kgo.Offset{w.cfg.Topic: {}}
	for p := int32(0); p < w.parts; p++ {
		start[w.cfg.Topic][p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(w.opts(kgo.ConsumePartitions(start), kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		w.h.addOtherError("final read", err)
		return
	}
	defer cl.Close()
	final := map[int32][]FinalRecord{}
	last := map[int32]int64{}
	done := func() bool {
		for p, m := range markers {
			if o, ok := last[p]; !ok || o < m {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.DrainTimeout)
	defer cancel()
	for !done() && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				w.h.addOtherError(fmt.Sprintf("final read of partition %d", p), err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if m, ok := markers[r.Partition]; ok && r.Offset > m {
				return
			}
			final[r.Partition] = append(final[r.Partition], FinalRecord{Offset: r.Offset, Raw: string(r.Value)})
			last[r.Partition] = r.Offset
		})
	}
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	for p := int32(0); p < w.parts; p++ {
		w.h.Final[p] = final[p]
		m, ok := markers[p]
		if !ok {
			continue // writeEndMarkers said why
		}
		o, read := last[p]
		if read && o >= m {
			continue
		}
		got := "nothing"
		if read {
			got = fmt.Sprintf("up to offset %d", o)
		}
		w.h.FinalErr[p] = fmt.Sprintf("read %s within %v; the end marker is at offset %d", got, w.cfg.DrainTimeout, m)
	}
}
