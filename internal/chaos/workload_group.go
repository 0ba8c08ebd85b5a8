package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupMember is one member of the workload's consumer group: read_committed, eager range
// balancing (every assignment is the member's whole share of a generation, so two members
// holding one partition in one generation is a plain fact of the history), autocommit.
type groupMember struct {
	w    *workload
	n    int
	cl   *kgo.Client
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}

	mu   sync.Mutex
	high map[int32]int64 // highest offset this member read, per partition
}

func (w *workload) newMember(n int) (*groupMember, error) {
	m := &groupMember{w: w, n: n, done: make(chan struct{}), high: map[int32]int64{}}
	m.ctx, m.stop = context.WithCancel(context.Background())
	record := func(cl *kgo.Client, assigned map[string][]int32, revoked bool) {
		member, gen := cl.GroupMetadata()
		ps := append([]int32(nil), assigned[w.cfg.Topic]...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		w.h.addAssign(Assignment{Member: member, Generation: gen, Partitions: ps, Time: time.Now(), Revoked: revoked})
	}
	cl, err := kgo.NewClient(w.opts(
		kgo.ConsumerGroup(w.group),
		kgo.ConsumeTopics(w.cfg.Topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.AutoCommitInterval(time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, a map[string][]int32) { record(cl, a, false) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			record(cl, r, true)
			// What kgo's default revoke does with autocommit: commit what was polled, so the
			// next owner starts after it.
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				w.h.addOtherError(fmt.Sprintf("consumer %d: commit on revoke", n), err)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, cl *kgo.Client, l map[string][]int32) { record(cl, l, true) }),
	)...)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	return m, nil
}

func (m *groupMember) poll() {
	defer close(m.done)
	for m.ctx.Err() == nil {
		fs := m.cl.PollFetches(m.ctx)
		if fs.IsClientClosed() {
			return
		}
		fs.EachError(func(_ string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				m.w.h.addOtherError(fmt.Sprintf("consumer %d, partition %d", m.n, p), err)
			}
		})
		member, gen := m.cl.GroupMetadata()
		now := time.Now()
		var got []Consumed
		fs.EachRecord(func(r *kgo.Record) {
			v, _ := ParseValue(r.Value)
			got = append(got, Consumed{Value: v, Raw: string(r.Value), Partition: r.Partition, Offset: r.Offset, Member: member, Generation: gen, Time: now})
		})
		if len(got) == 0 {
			continue
		}
		m.mu.Lock()
		for _, c := range got {
			if c.Offset > m.high[c.Partition] {
				m.high[c.Partition] = c.Offset
			}
		}
		m.mu.Unlock()
		m.w.h.addConsumed(got)
	}
}

// reached copies into out the highest offsets read per partition.
func (m *groupMember) reached(out map[int32]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, o := range m.high {
		if o > out[p] {
			out[p] = o
		}
	}
}

// close leaves the group (committing what was polled) and ends the poll loop.
func (m *groupMember) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.cl.CommitUncommittedOffsets(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		m.w.h.addOtherError(fmt.Sprintf("consumer %d: final commit", m.n), err)
	}
	m.stop()
	<-m.done
	m.cl.Close()
}

// waitConsumers waits (DrainTimeout at most) until the group has read every end marker.
func (w *workload) waitConsumers(markers map[int32]int64, members []*groupMember) {
	deadline := time.Now().Add(w.cfg.DrainTimeout)
	for time.Now().Before(deadline) {
		high := map[int32]int64{}
		for _, m := range members {
			m.reached(high)
		}
		behind := 0
		for p, o := range markers {
			if high[p] < o {
				behind++
			}
		}
		if behind == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.log.Warn("the consumer group did not read every end marker in time")
}

// pollCommitted asks the coordinator for the group's committed offsets every second
// (OffsetFetch) until ctx is done: the checker wants them never to go backwards.
func (w *workload) pollCommitted(ctx context.Context) {
	cl, err := kgo.NewClient(w.opts()...)
	if err != nil {
		w.h.addOtherError("committed-offset poller", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		offs, err := adm.FetchOffsets(rctx, w.group)
		cancel()
		if err != nil {
			continue // coordinator moving: the next poll tries again
		}
		now := time.Now()
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == w.cfg.Topic && o.Err == nil && o.At >= 0 {
				w.h.addCommitted(CommittedOffset{Partition: o.Partition, Offset: o.At, Time: now})
			}
		})
	}
}
