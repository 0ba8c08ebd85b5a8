package faults

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Ack is one acknowledged write: where the broker said the record went.
type Ack struct {
	Producer  int    // producer index; -1 for a probe
	Partition int32  //
	Offset    int64  //
	Value     string // unique per write
	At        time.Time
}

// Probe is one direct produce (acks=all, one record) to one broker for one partition: what
// "leaders accepting writes" is observed through. Sent is taken before the request goes out,
// Done after its answer; Err is nil when the broker acknowledged it at Offset.
type Probe struct {
	Broker     int32
	Partition  int32
	Value      string
	Offset     int64
	Sent, Done time.Time
	Err        error
}

// Stored is a record as read back: its value and the leader epoch of its batch.
type Stored struct {
	Value string
	Epoch int32
}

// Ledger collects acknowledgments, failures and probes from concurrent producers.
type Ledger struct {
	mu     sync.Mutex
	acks   []Ack
	probes []Probe
	failed int
	first  error
}

// Ack records an acknowledged write.
func (l *Ledger) Ack(a Ack) {
	l.mu.Lock()
	l.acks = append(l.acks, a)
	l.mu.Unlock()
}

// Fail records a write the producer gave up on (not acknowledged: no promise to check).
func (l *Ledger) Fail(err error) {
	l.mu.Lock()
	l.failed++
	if l.first == nil {
		l.first = err
	}
	l.mu.Unlock()
}

// Probe records a probe's outcome.
func (l *Ledger) Probe(p Probe) {
	l.mu.Lock()
	l.probes = append(l.probes, p)
	l.mu.Unlock()
}

// Acked is the number of acknowledged writes so far (probes included).
func (l *Ledger) Acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.acks)
	for _, p := range l.probes {
		if p.Err == nil {
			n++
		}
	}
	return n
}

// LastAck is the time of the latest acknowledgment for partition (producers or probes).
func (l *Ledger) LastAck(partition int32) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for _, a := range l.acks {
		if a.Partition == partition && a.At.After(last) {
			last = a.At
		}
	}
	for _, p := range l.probes {
		if p.Partition == partition && p.Err == nil && p.Done.After(last) {
			last = p.Done
		}
	}
	return last
}

// Snapshot returns copies of everything recorded.
func (l *Ledger) Snapshot() (acks []Ack, probes []Probe, failed int, first error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Ack(nil), l.acks...), append([]Probe(nil), l.probes...), l.failed, l.first
}

// Report is what Check found. Problems lists every violation (at most a few of each kind);
// the counts are the totals.
type Report struct {
	Acked        int // acknowledged writes checked (producer records and accepted probes)
	Failed       int // writes the producers gave up on
	Lost         int // acknowledged, not in the partition at all
	Misplaced    int // acknowledged, in the partition but not at the acknowledged offset
	Duplicates   int // extra copies of a value in the topic
	OutOfOrder   int // a producer's acknowledgments whose offsets go backwards in one partition
	SharedEpochs int // leader epochs whose writes were accepted by more than one broker
	SplitBrain   int // probes accepted by a broker after a newer leader had already accepted one

	Leaders  []string                // per partition: the brokers seen accepting writes, in order, with epochs
	MaxGap   map[int32]time.Duration // per partition: the longest time without any acknowledgment
	Problems []string
}

// OK reports whether every acknowledged record is intact and no two leaders overlapped.
func (r *Report) OK() bool {
	return r.Lost == 0 && r.Misplaced == 0 && r.Duplicates == 0 && r.OutOfOrder == 0 &&
		r.SharedEpochs == 0 && r.SplitBrain == 0
}

func (r *Report) problem(kind *int, format string, args ...any) {
	*kind++
	if *kind <= 5 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Check compares what was acknowledged with what was read back (partition → offset →
// record). window bounds the gap measurement: from its start to its end, the longest
// stretch per partition without an acknowledgment is MaxGap.
func Check(acks []Ack, probes []Probe, failed int, stored map[int32]map[int64]Stored, from, to time.Time) *Report {
	r := &Report{Failed: failed, MaxGap: map[int32]time.Duration{}}
	all := append([]Ack(nil), acks...)
	for _, p := range probes {
		if p.Err == nil {
			all = append(all, Ack{Producer: -1, Partition: p.Partition, Offset: p.Offset, Value: p.Value, At: p.Done})
		}
	}
	r.Acked = len(all)

	// Exactly once, at its offset.
	where := map[string][]string{} // value → "p/offset" of each copy
	for p, offs := range stored {
		for off, s := range offs {
			where[s.Value] = append(where[s.Value], fmt.Sprintf("%d/%d", p, off))
		}
	}
	for v, at := range where {
		if len(at) > 1 {
			sort.Strings(at)
			r.Duplicates += len(at) - 1
			if r.Duplicates <= 5 {
				r.Problems = append(r.Problems, fmt.Sprintf("%s stored %d times (partition/offset %s)", v, len(at), strings.Join(at, " ")))
			}
		}
	}
	for _, a := range all {
		s, ok := stored[a.Partition][a.Offset]
		switch {
		case ok && s.Value == a.Value:
		case len(where[a.Value]) == 0:
			r.problem(&r.Lost, "lost: %s acked at %d/%d, not in the topic", a.Value, a.Partition, a.Offset)
		default:
			r.problem(&r.Misplaced, "misplaced: %s acked at %d/%d, stored at %v", a.Value, a.Partition, a.Offset, where[a.Value])
		}
	}

	// In order: one producer's acknowledgments in one partition have increasing offsets.
	last := map[[2]int64]int64{}
	for _, a := range acks {
		k := [2]int64{int64(a.Producer), int64(a.Partition)}
		if prev, ok := last[k]; ok && a.Offset <= prev {
			r.problem(&r.OutOfOrder, "producer %d, partition %d: ack at offset %d after one at %d", a.Producer, a.Partition, a.Offset, prev)
		}
		last[k] = a.Offset
	}

	r.checkLeaders(probes, stored)
	r.gaps(all, from, to)
	return r
}

// checkLeaders: every leader epoch's writes come from one broker, and no broker accepts a
// probe it was sent after a broker with a newer epoch had acknowledged one (both records
// would then have been appended by two leaders at once: the old one after the new one led).
func (r *Report) checkLeaders(probes []Probe, stored map[int32]map[int64]Stored) {
	type acc struct {
		p     Probe
		epoch int32
	}
	byPart := map[int32][]acc{}
	for _, p := range probes {
		if p.Err != nil {
			continue
		}
		s, ok := stored[p.Partition][p.Offset]
		if !ok || s.Value != p.Value {
			continue // counted as lost or misplaced
		}
		byPart[p.Partition] = append(byPart[p.Partition], acc{p, s.Epoch})
	}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, part := range parts {
		as := byPart[part]
		epochBroker := map[int32]int32{}
		for _, a := range as {
			if b, ok := epochBroker[a.epoch]; ok && b != a.p.Broker {
				r.problem(&r.SharedEpochs, "partition %d: leader epoch %d accepted writes on brokers %d and %d", part, a.epoch, b, a.p.Broker)
			}
			epochBroker[a.epoch] = a.p.Broker
		}
		// Sorted by answer time: the newest epoch acknowledged before each probe was sent.
		sort.Slice(as, func(i, j int) bool { return as[i].p.Done.Before(as[j].p.Done) })
		for _, a := range as {
			for _, b := range as {
				if b.p.Done.Before(a.p.Sent) && b.epoch > a.epoch {
					r.problem(&r.SplitBrain, "partition %d: broker %d (epoch %d) accepted a probe sent %v after broker %d (epoch %d) had accepted one",
						part, a.p.Broker, a.epoch, a.p.Sent.Sub(b.p.Done).Round(time.Millisecond), b.p.Broker, b.epoch)
					break
				}
			}
		}
		var seq []string
		prev := ""
		for _, a := range as {
			s := fmt.Sprintf("broker %d (epoch %d)", a.p.Broker, a.epoch)
			if s != prev {
				seq = append(seq, s)
				prev = s
			}
		}
		r.Leaders = append(r.Leaders, fmt.Sprintf("partition %d: %s", part, strings.Join(seq, " → ")))
	}
}

// gaps sets MaxGap: per partition, the longest time in [from, to] between two
// acknowledgments (or from `from` to the first, or the last to `to`).
func (r *Report) gaps(all []Ack, from, to time.Time) {
	times := map[int32][]time.Time{}
	for _, a := range all {
		times[a.Partition] = append(times[a.Partition], a.At)
	}
	for p, ts := range times {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		prev := from
		var longest time.Duration
		for _, t := range ts {
			if t.Before(from) {
				continue
			}
			if t.After(to) {
				break
			}
			if d := t.Sub(prev); d > longest {
				longest = d
			}
			prev = t
		}
		if d := to.Sub(prev); d > longest {
			longest = d
		}
		r.MaxGap[p] = longest
	}
}

// String is the report's summary line.
func (r *Report) String() string {
	parts := make([]int32, 0, len(r.MaxGap))
	for p := range r.MaxGap {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var gaps []string
	for _, p := range parts {
		gaps = append(gaps, fmt.Sprintf("p%d %v", p, r.MaxGap[p].Round(10*time.Millisecond)))
	}
	return fmt.Sprintf("%d acked, %d failed (not acked), %d lost, %d misplaced, %d duplicates, %d out of order, %d shared epochs, %d split-brain probes; longest write pause: %s",
		r.Acked, r.Failed, r.Lost, r.Misplaced, r.Duplicates, r.OutOfOrder, r.SharedEpochs, r.SplitBrain, strings.Join(gaps, ", "))
}
