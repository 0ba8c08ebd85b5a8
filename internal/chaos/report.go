package chaos

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// WriteText prints the verdict line, the counts, the fault windows and every violation with
// the windows open when it happened.
func WriteText(w io.Writer, h *History, r Result) {
	fmt.Fprintln(w, r.Verdict())
	c := r.Counts
	fmt.Fprintf(w, "run %s, topic %s, %v\n", h.Run, h.Topic, h.End.Sub(h.Start).Round(time.Second))
	fmt.Fprintf(w, "records: %d acknowledged, %d not acknowledged, %d consumed, %d in the final read\n",
		c.Acked, c.Failed, c.Consumed, c.FinalRecords)
	if c.TxnCommitted+c.TxnAborted+c.TxnUnknown > 0 {
		fmt.Fprintf(w, "transactions: %d committed, %d aborted, %d with an unknown outcome\n", c.TxnCommitted, c.TxnAborted, c.TxnUnknown)
	}
	fmt.Fprintf(w, "group: %d assignments seen, %d committed offsets polled\n", c.Assignments, c.CommitPolls)
	fmt.Fprintf(w, "faults: %d applied, %d failed\n", c.Faults, c.FaultErrs)
	if c.Acked == 0 {
		fmt.Fprintln(w, "warning: no record was acknowledged, so no acknowledgement was checked")
	}
	for _, fw := range h.Windows {
		fmt.Fprintf(w, "  %s\n", describeWindow(h, fw))
	}
	if len(r.Violations) > 0 {
		fmt.Fprintln(w, "violations:")
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  %s\n", describeViolation(h, v))
	}
}

func describeWindow(h *History, fw FaultWindow) string {
	end := "still open"
	if !fw.End.IsZero() {
		end = fmt.Sprintf("+%s (%v)", rel(h, fw.End), fw.End.Sub(fw.Start).Round(time.Millisecond))
	}
	s := fmt.Sprintf("#%d %s broker %d: +%s to %s", fw.Seq, fw.Action, fw.Broker, rel(h, fw.Start), end)
	if fw.Detail != "" {
		s += ": " + fw.Detail
	}
	if fw.Err != "" {
		s += " (error: " + fw.Err + ")"
	}
	return s
}

func describeViolation(h *History, v Violation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s partition %d", v.Kind, v.Partition)
	if v.Offset >= 0 {
		fmt.Fprintf(&b, " offset %d", v.Offset)
	}
	if v.Value != "" {
		fmt.Fprintf(&b, " %s", v.Value)
	}
	if !v.Time.IsZero() {
		fmt.Fprintf(&b, " at +%s", rel(h, v.Time))
	}
	fmt.Fprintf(&b, ": %s; %s", v.Detail, windowNames(h, v))
	return b.String()
}

// windowNames says which fault windows were open, or which one ended last before.
func windowNames(h *History, v Violation) string {
	if len(v.Windows) > 0 {
		var names []string
		for _, seq := range v.Windows {
			for _, fw := range h.Windows {
				if fw.Seq == seq {
					names = append(names, fmt.Sprintf("#%d %s broker %d", fw.Seq, fw.Action, fw.Broker))
				}
			}
		}
		return "during " + strings.Join(names, ", ")
	}
	var prev *FaultWindow
	for i := range h.Windows {
		fw := &h.Windows[i]
		if !fw.End.IsZero() && !fw.End.After(v.Time) && (prev == nil || fw.End.After(prev.End)) {
			prev = fw
		}
	}
	if prev == nil || v.Time.IsZero() {
		return "in no fault window"
	}
	return fmt.Sprintf("in no fault window (%v after #%d %s broker %d ended)", v.Time.Sub(prev.End).Round(time.Millisecond), prev.Seq, prev.Action, prev.Broker)
}

func rel(h *History, t time.Time) string {
	return fmt.Sprintf("%.3fs", t.Sub(h.Start).Seconds())
}

// second is one second of the run, for the timeline.
type second struct {
	acks, consumed, errors int
	p50, p99               float64 // milliseconds; 0 without acknowledgements
}

// perSecond buckets the history by second from h.Start.
func perSecond(h *History) []second {
	n := int(h.End.Sub(h.Start)/time.Second) + 1
	if n < 1 {
		n = 1
	}
	out := make([]second, n)
	idx := func(t time.Time) int {
		i := int(t.Sub(h.Start) / time.Second)
		if i < 0 {
			return 0
		}
		if i >= n {
			return n - 1
		}
		return i
	}
	lat := make([][]float64, n)
	for _, a := range h.Acks {
		i := idx(a.Time)
		out[i].acks++
		lat[i] = append(lat[i], float64(a.Latency)/float64(time.Millisecond))
	}
	for _, c := range h.Consumed {
		out[idx(c.Time)].consumed++
	}
	for _, e := range h.Errors {
		out[idx(e.Time)].errors++
	}
	for _, e := range h.OtherErrors {
		out[idx(e.Time)].errors++
	}
	for i, l := range lat {
		if len(l) == 0 {
			continue
		}
		sort.Float64s(l)
		out[i].p50 = quantile(l, 0.50)
		out[i].p99 = quantile(l, 0.99)
	}
	return out
}

func quantile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted)-1) + 0.5)
	return sorted[i]
}
