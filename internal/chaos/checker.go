package chaos

import (
	"fmt"
	"sort"
	"time"
)

// Violation kinds: each names the guarantee it refutes.
const (
	KindLost           = "lost"             // an acknowledged record is not in the log at its acknowledged offset
	KindOrder          = "order"            // a producer's acknowledged records of a partition are out of order
	KindDuplicate      = "duplicate"        // one record (producer, partition, sequence) at two offsets
	KindAbortedRead    = "aborted-read"     // a record of an aborted transaction was read with read_committed
	KindUncommitted    = "uncommitted-read" // a transactional record was read before its commit was requested
	KindPhantom        = "phantom-read"     // a consumer read a record the log does not have at that offset
	KindConsumerOrder  = "consumer-order"   // one member read a partition's offsets backwards within a generation
	KindAssignment     = "double-assignment"
	KindCommitBackward = "commit-backwards"
	KindFinalRead      = "final-read" // the ground-truth read did not complete
)

// Violation is one refuted guarantee, with the record it concerns and the fault windows that
// were open when it happened (Time).
type Violation struct {
	Kind      string    `json:"kind"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Value     string    `json:"value,omitempty"`
	Time      time.Time `json:"time"`
	Detail    string    `json:"detail"`
	Windows   []int     `json:"windows,omitempty"` // FaultWindow.Seq of the windows open at Time
}

// Result is the checker's verdict.
type Result struct {
	Violations []Violation
	Counts     Counts
}

// Pass says whether no guarantee was refuted.
func (r Result) Pass() bool { return len(r.Violations) == 0 }

// Verdict is the one-line verdict: "PASS" or "FAIL: n violations".
func (r Result) Verdict() string {
	if r.Pass() {
		return "PASS"
	}
	if len(r.Violations) == 1 {
		return "FAIL: 1 violation"
	}
	return fmt.Sprintf("FAIL: %d violations", len(r.Violations))
}

// Check runs every check over a finished history. It reads h.Final as the ground truth.
func Check(h *History) Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	var vs []Violation
	vs = append(vs, checkFinalRead(h)...)
	vs = append(vs, checkAcks(h)...)
	vs = append(vs, checkDuplicates(h)...)
	vs = append(vs, checkTransactions(h)...)
	vs = append(vs, checkConsumed(h)...)
	vs = append(vs, checkAssignments(h)...)
	vs = append(vs, checkCommitted(h)...)
	for i := range vs {
		vs[i].Windows = windowsAt(h.Windows, vs[i].Time)
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Time.Before(vs[j].Time) })
	return Result{Violations: vs, Counts: h.countsLocked()}
}

// windowsAt lists the windows open at t (a zero End is still open).
func windowsAt(ws []FaultWindow, t time.Time) []int {
	if t.IsZero() {
		return nil
	}
	var out []int
	for _, w := range ws {
		if !t.Before(w.Start) && (w.End.IsZero() || !t.After(w.End)) {
			out = append(out, w.Seq)
		}
	}
	return out
}

// finalIndex maps each partition's final offsets to their records.
type finalIndex struct {
	at    map[int32]map[int64]string // partition -> offset -> raw value
	where map[Value][]int64          // this run's values -> offsets they are at
	runs  map[int32]map[int64]Value  // parsed values of this run by partition, offset
	ok    map[int32]bool             // partitions whose final read completed
}

func indexFinal(h *History) finalIndex {
	fi := finalIndex{at: map[int32]map[int64]string{}, where: map[Value][]int64{},
		runs: map[int32]map[int64]Value{}, ok: map[int32]bool{}}
	for p, recs := range h.Final {
		fi.at[p] = map[int64]string{}
		fi.runs[p] = map[int64]Value{}
		if h.FinalErr[p] == "" {
			fi.ok[p] = true
		}
		for _, r := range recs {
			fi.at[p][r.Offset] = r.Raw
			if v, ok := ParseValue([]byte(r.Raw)); ok && v.Run == h.Run && v.Producer != EndMarkerProducer {
				fi.where[v] = append(fi.where[v], r.Offset)
				fi.runs[p][r.Offset] = v
			}
		}
	}
	return fi
}

func checkFinalRead(h *History) []Violation {
	var vs []Violation
	parts := make([]int32, 0, len(h.FinalErr))
	for p, e := range h.FinalErr {
		if e != "" {
			parts = append(parts, p)
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		vs = append(vs, Violation{Kind: KindFinalRead, Partition: p, Offset: -1, Time: h.End,
			Detail: "final read_committed read incomplete: " + h.FinalErr[p]})
	}
	return vs
}

// txnOf maps each transactional record to its transaction.
func txnOf(h *History) map[Value]*Txn {
	m := map[Value]*Txn{}
	for _, t := range h.Txns {
		for _, v := range t.Records {
			m[v] = t
		}
	}
	return m
}

// checkAcks: every acknowledged record (outside transactions, or in a committed one) is in
// the final read at its acknowledged offset; a producer's acknowledged records of a
// partition have offsets in the order of their sequence numbers.
func checkAcks(h *History) []Violation {
	fi := indexFinal(h)
	txns := txnOf(h)
	var vs []Violation
	type pp struct {
		producer  int
		partition int32
	}
	byPP := map[pp][]Ack{}
	for _, a := range h.Acks {
		byPP[pp{a.Value.Producer, a.Value.Partition}] = append(byPP[pp{a.Value.Producer, a.Value.Partition}], a)
		if t := txns[a.Value]; t != nil && t.Outcome != TxnCommitted {
			continue // aborted or unknown: not promised
		}
		p := a.Value.Partition
		if !fi.ok[p] && len(fi.at[p]) == 0 {
			continue // the final read failed: reported once as final-read
		}
		raw, present := fi.at[p][a.Offset]
		if present && raw == a.Value.String() {
			continue
		}
		if !present && !fi.ok[p] {
			continue // beyond an incomplete final read
		}
		detail := fmt.Sprintf("acknowledged at offset %d (latency %v)", a.Offset, a.Latency.Round(time.Millisecond))
		switch {
		case !present:
			detail += "; the offset is not in the log"
		default:
			detail += fmt.Sprintf("; the log has %q there", raw)
		}
		if offs := fi.where[a.Value]; len(offs) > 0 {
			detail += fmt.Sprintf("; the record is at offset(s) %v", offs)
		}
		vs = append(vs, Violation{Kind: KindLost, Partition: p, Offset: a.Offset, Value: a.Value.String(), Time: a.Time, Detail: detail})
	}
	keys := make([]pp, 0, len(byPP))
	for k := range byPP {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].producer != keys[j].producer {
			return keys[i].producer < keys[j].producer
		}
		return keys[i].partition < keys[j].partition
	})
	for _, k := range keys {
		acks := byPP[k]
		sort.Slice(acks, func(i, j int) bool { return acks[i].Value.Seq < acks[j].Value.Seq })
		for i := 1; i < len(acks); i++ {
			prev, cur := acks[i-1], acks[i]
			if t := txns[cur.Value]; t != nil && t.Outcome != TxnCommitted {
				continue
			}
			if t := txns[prev.Value]; t != nil && t.Outcome != TxnCommitted {
				continue
			}
			if cur.Offset <= prev.Offset {
				vs = append(vs, Violation{Kind: KindOrder, Partition: k.partition, Offset: cur.Offset, Value: cur.Value.String(), Time: cur.Time,
					Detail: fmt.Sprintf("sequence %d acknowledged at offset %d, not after sequence %d at offset %d", cur.Value.Seq, cur.Offset, prev.Value.Seq, prev.Offset)})
			}
		}
	}
	return vs
}

// checkDuplicates: every producer is idempotent or transactional, so no record is in the
// log twice, and no consumer read one record at two offsets.
func checkDuplicates(h *History) []Violation {
	fi := indexFinal(h)
	ackTime := map[Value]time.Time{}
	for _, a := range h.Acks {
		ackTime[a.Value] = a.Time
	}
	var vs []Violation
	seen := map[Value]bool{}
	for _, p := range sortedParts(h.Final) {
		for _, r := range h.Final[p] {
			v, ok := fi.runs[p][r.Offset]
			if !ok || seen[v] {
				continue
			}
			if offs := fi.where[v]; len(offs) > 1 {
				seen[v] = true
				vs = append(vs, Violation{Kind: KindDuplicate, Partition: p, Offset: offs[1], Value: v.String(), Time: ackTime[v],
					Detail: fmt.Sprintf("in the log at offsets %v", offs)})
			}
		}
	}
	consumedAt := map[Value]map[int64]Consumed{}
	for _, c := range h.Consumed {
		if c.Value.Run != h.Run || seen[c.Value] {
			continue
		}
		m := consumedAt[c.Value]
		if m == nil {
			m = map[int64]Consumed{}
			consumedAt[c.Value] = m
		}
		if _, ok := m[c.Offset]; ok {
			continue
		}
		m[c.Offset] = c
		if len(m) == 2 {
			seen[c.Value] = true
			var offs []int64
			for o := range m {
				offs = append(offs, o)
			}
			sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
			vs = append(vs, Violation{Kind: KindDuplicate, Partition: c.Partition, Offset: c.Offset, Value: c.Value.String(), Time: c.Time,
				Detail: fmt.Sprintf("consumed at offsets %v", offs)})
		}
	}
	return vs
}

// checkTransactions: no record of an aborted transaction in the committed log or read by a
// read_committed consumer, and no transactional record read before its commit was asked.
func checkTransactions(h *History) []Violation {
	fi := indexFinal(h)
	txns := txnOf(h)
	var vs []Violation
	for _, p := range sortedParts(h.Final) {
		for _, r := range h.Final[p] {
			v, ok := fi.runs[p][r.Offset]
			if !ok {
				continue
			}
			if t := txns[v]; t != nil && t.Outcome == TxnAborted {
				vs = append(vs, Violation{Kind: KindAbortedRead, Partition: p, Offset: r.Offset, Value: v.String(), Time: t.End,
					Detail: fmt.Sprintf("final read_committed read has a record of aborted transaction %d of producer %d", t.Num, t.Producer)})
			}
		}
	}
	for _, c := range h.Consumed {
		t := txns[c.Value]
		if t == nil || c.Value.Run != h.Run {
			continue
		}
		switch {
		case t.Outcome == TxnAborted:
			vs = append(vs, Violation{Kind: KindAbortedRead, Partition: c.Partition, Offset: c.Offset, Value: c.Value.String(), Time: c.Time,
				Detail: fmt.Sprintf("member %s (generation %d) read a record of aborted transaction %d of producer %d", c.Member, c.Generation, t.Num, t.Producer)})
		case t.Ending.IsZero() || c.Time.Before(t.Ending):
			vs = append(vs, Violation{Kind: KindUncommitted, Partition: c.Partition, Offset: c.Offset, Value: c.Value.String(), Time: c.Time,
				Detail: fmt.Sprintf("member %s (generation %d) read it before transaction %d of producer %d asked to commit", c.Member, c.Generation, t.Num, t.Producer)})
		}
	}
	return vs
}

// checkConsumed: what consumers read is the log (the same record at the same offset), and
// one member reads a partition forwards within a generation.
func checkConsumed(h *History) []Violation {
	fi := indexFinal(h)
	var vs []Violation
	type mgp struct {
		member     string
		generation int32
		partition  int32
	}
	last := map[mgp]int64{}
	reported := map[int32]map[int64]bool{}
	for _, c := range h.Consumed {
		k := mgp{c.Member, c.Generation, c.Partition}
		if prev, ok := last[k]; ok && c.Offset <= prev {
			vs = append(vs, Violation{Kind: KindConsumerOrder, Partition: c.Partition, Offset: c.Offset, Value: c.Raw, Time: c.Time,
				Detail: fmt.Sprintf("member %s (generation %d) read offset %d after offset %d", c.Member, c.Generation, c.Offset, prev)})
		}
		last[k] = c.Offset
		if !fi.ok[c.Partition] {
			continue
		}
		raw, present := fi.at[c.Partition][c.Offset]
		if present && raw == c.Raw {
			continue
		}
		if reported[c.Partition] == nil {
			reported[c.Partition] = map[int64]bool{}
		}
		if reported[c.Partition][c.Offset] {
			continue
		}
		reported[c.Partition][c.Offset] = true
		d := fmt.Sprintf("member %s (generation %d) read it at offset %d; ", c.Member, c.Generation, c.Offset)
		if present {
			d += fmt.Sprintf("the log has %q there", raw)
		} else {
			d += "the log has no record there"
		}
		vs = append(vs, Violation{Kind: KindPhantom, Partition: c.Partition, Offset: c.Offset, Value: c.Raw, Time: c.Time, Detail: d})
	}
	return vs
}

// checkAssignments: within one generation no partition belongs to two members.
func checkAssignments(h *History) []Violation {
	var vs []Violation
	owner := map[int32]map[int32]string{} // generation -> partition -> member
	for _, a := range h.Assigns {
		if a.Revoked {
			continue
		}
		m := owner[a.Generation]
		if m == nil {
			m = map[int32]string{}
			owner[a.Generation] = m
		}
		for _, p := range a.Partitions {
			if other, ok := m[p]; ok && other != a.Member {
				vs = append(vs, Violation{Kind: KindAssignment, Partition: p, Offset: -1, Time: a.Time,
					Detail: fmt.Sprintf("generation %d assigned partition %d to %s and %s", a.Generation, p, other, a.Member)})
				continue
			}
			m[p] = a.Member
		}
	}
	return vs
}

// checkCommitted: the group's committed offset of a partition never decreases.
func checkCommitted(h *History) []Violation {
	var vs []Violation
	last := map[int32]CommittedOffset{}
	for _, c := range h.Committed {
		if prev, ok := last[c.Partition]; ok && c.Offset < prev.Offset {
			vs = append(vs, Violation{Kind: KindCommitBackward, Partition: c.Partition, Offset: c.Offset, Time: c.Time,
				Detail: fmt.Sprintf("committed offset went from %d (at %s) to %d", prev.Offset, prev.Time.Format("15:04:05.000"), c.Offset)})
		}
		if prev, ok := last[c.Partition]; !ok || c.Offset >= prev.Offset {
			last[c.Partition] = c
		}
	}
	return vs
}

func sortedParts(m map[int32][]FinalRecord) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
