package chaos

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 3, 21, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// hist builds a history of run "r" on two partitions in which producer 0 wrote seqs 0..2 to
// partition 0 at offsets 0..2 and seqs 0..1 to partition 1 at offsets 0..1, every record
// acknowledged, consumed once by member "m1" of generation 1 and in the final read, followed
// by each partition's end marker.
func hist() *History {
	h := NewHistory("r", "t")
	h.Start, h.End = t0, at(60)
	h.Assigns = []Assignment{{Member: "m1", Generation: 1, Partitions: []int32{0, 1}, Time: at(1)}}
	add := func(part int32, n int) {
		for i := 0; i < n; i++ {
			v := Value{Run: "r", Producer: 0, Partition: part, Seq: int64(i)}
			h.Acks = append(h.Acks, Ack{Value: v, Offset: int64(i), Time: at(float64(2 + i)), Latency: 5 * time.Millisecond, Txn: -1})
			h.Final[part] = append(h.Final[part], FinalRecord{Offset: int64(i), Raw: v.String()})
			h.Consumed = append(h.Consumed, Consumed{Value: v, Raw: v.String(), Partition: part, Offset: int64(i), Member: "m1", Generation: 1, Time: at(float64(3 + i))})
		}
		end := Value{Run: "r", Producer: EndMarkerProducer, Partition: part}
		h.Final[part] = append(h.Final[part], FinalRecord{Offset: int64(n), Raw: end.String()})
	}
	add(0, 3)
	add(1, 2)
	h.Committed = []CommittedOffset{{Partition: 0, Offset: 1, Time: at(5)}, {Partition: 0, Offset: 3, Time: at(6)}}
	h.Windows = []FaultWindow{{Seq: 1, Action: "kill-leader", Broker: 2, Start: at(3.5), End: at(10)}}
	return h
}

// only asserts that the checker found exactly the violations of these kinds, in order.
func only(t *testing.T, r Result, kinds ...string) {
	t.Helper()
	var got []string
	for _, v := range r.Violations {
		got = append(got, v.Kind)
	}
	if strings.Join(got, ",") != strings.Join(kinds, ",") {
		t.Fatalf("violations %v, want %v:\n%+v", got, kinds, r.Violations)
	}
}

func TestCheckPass(t *testing.T) {
	r := Check(hist())
	only(t, r)
	if !r.Pass() || r.Verdict() != "PASS" {
		t.Fatalf("verdict %q", r.Verdict())
	}
	if r.Counts.Acked != 5 || r.Counts.FinalRecords != 7 || r.Counts.Consumed != 5 {
		t.Fatalf("counts %+v", r.Counts)
	}
}

func TestCheckLostOverwritten(t *testing.T) {
	h := hist()
	// Offset 2 of partition 0 holds another producer's record: the acknowledged one was lost
	// (a truncated leader's tail overwritten by the new leader).
	other := Value{Run: "r", Producer: 1, Partition: 0, Seq: 0}
	h.Final[0][2].Raw = other.String()
	h.Consumed = append(h.Consumed[:2], h.Consumed[3:]...) // nobody read the lost one
	r := Check(h)
	only(t, r, KindLost)
	v := r.Violations[0]
	if v.Partition != 0 || v.Offset != 2 || v.Value != "chaos/r/0/0/2" || len(v.Windows) != 1 || v.Windows[0] != 1 {
		t.Fatalf("violation %+v", v)
	}
	if r.Verdict() != "FAIL: 1 violation" {
		t.Fatalf("verdict %q", r.Verdict())
	}
}

func TestCheckLostMissingAndPhantom(t *testing.T) {
	h := hist()
	// The log lost its tail: offset 1 and 2 of partition 0 are gone, the end marker moved up.
	h.Final[0] = []FinalRecord{h.Final[0][0], {Offset: 1, Raw: Value{Run: "r", Producer: EndMarkerProducer}.String()}}
	r := Check(h)
	// acks of seq 1 and 2 lost; the consumer read offsets 1 and 2, which the log does not
	// have as read (offset 1 is now the marker, offset 2 is missing).
	only(t, r, KindLost, KindLost, KindPhantom, KindPhantom)
	if !strings.Contains(r.Violations[1].Detail, "not in the log") {
		t.Fatalf("detail %q", r.Violations[1].Detail)
	}
}

func TestCheckOrder(t *testing.T) {
	h := hist()
	// seq 1 acknowledged at an offset below seq 0's.
	h.Acks[0].Offset, h.Acks[1].Offset = 1, 0
	h.Final[0][0].Raw, h.Final[0][1].Raw = h.Final[0][1].Raw, h.Final[0][0].Raw
	h.Consumed[0].Raw, h.Consumed[1].Raw = h.Final[0][0].Raw, h.Final[0][1].Raw
	h.Consumed[0].Value, h.Consumed[1].Value = h.Acks[1].Value, h.Acks[0].Value
	only(t, Check(h), KindOrder)
}

func TestCheckDuplicate(t *testing.T) {
	h := hist()
	// seq 1 of partition 1 written twice (a retried batch the idempotent producer should have
	// deduplicated): the second copy at offset 2, the marker after it.
	dup := h.Final[1][1]
	dup.Offset = 2
	h.Final[1] = []FinalRecord{h.Final[1][0], h.Final[1][1], dup, {Offset: 3, Raw: h.Final[1][2].Raw}}
	only(t, Check(h), KindDuplicate)

	h = hist()
	// A consumer read one record at two offsets (and the log has neither copy twice: then
	// the second is also a phantom).
	c := h.Consumed[0]
	c.Offset = 7
	h.Consumed = append(h.Consumed, c)
	only(t, Check(h), KindDuplicate, KindPhantom)
}

func TestCheckTransactions(t *testing.T) {
	h := hist()
	aborted := Value{Run: "r", Producer: 5, Partition: 1, Seq: 0}
	committed := Value{Run: "r", Producer: 5, Partition: 1, Seq: 1}
	h.Txns = []*Txn{
		{Producer: 5, Num: 0, Records: []Value{aborted}, Outcome: TxnAborted, Start: at(20), End: at(21)},
		{Producer: 5, Num: 1, Records: []Value{committed}, Outcome: TxnCommitted, Start: at(22), Ending: at(23), End: at(24)},
	}
	h.Acks = append(h.Acks, Ack{Value: aborted, Offset: 9, Time: at(20.5), Txn: 0}, Ack{Value: committed, Offset: 11, Time: at(22.5), Txn: 1})
	// An acknowledged record of an aborted transaction that is not in the log is not lost; the
	// committed one is.
	r := Check(h)
	only(t, r, KindLost)
	if r.Violations[0].Value != committed.String() {
		t.Fatalf("lost %+v", r.Violations[0])
	}

	// The committed record in the log, read after the commit was asked: fine. The aborted
	// one in the log and read by a consumer: two aborted-read violations; a committed one read
	// before its commit was asked: uncommitted-read.
	marker := h.Final[1][2]
	marker.Offset = 12
	h.Final[1] = []FinalRecord{h.Final[1][0], h.Final[1][1], {Offset: 9, Raw: aborted.String()}, {Offset: 11, Raw: committed.String()}, marker}
	h.Acks = h.Acks[:len(h.Acks)-1]
	h.Acks = append(h.Acks, Ack{Value: committed, Offset: 11, Time: at(22.5), Txn: 1})
	h.Consumed = append(h.Consumed,
		Consumed{Value: aborted, Raw: aborted.String(), Partition: 1, Offset: 9, Member: "m1", Generation: 1, Time: at(21.5)},
		Consumed{Value: committed, Raw: committed.String(), Partition: 1, Offset: 11, Member: "m1", Generation: 1, Time: at(22.8)})
	only(t, Check(h), KindAbortedRead, KindAbortedRead, KindUncommitted)

	h.Consumed[len(h.Consumed)-1].Time = at(23.5)
	h.Final[1] = append(h.Final[1][:2], h.Final[1][3:]...)
	h.Consumed = append(h.Consumed[:len(h.Consumed)-2], h.Consumed[len(h.Consumed)-1])
	only(t, Check(h))
}

func TestCheckConsumerOrder(t *testing.T) {
	h := hist()
	c := h.Consumed[2] // partition 0 offset 2 read again after it, in the same generation
	c.Offset, c.Raw, c.Value = 1, h.Final[0][1].Raw, h.Acks[1].Value
	h.Consumed = append(h.Consumed[:3], append([]Consumed{c}, h.Consumed[3:]...)...)
	only(t, Check(h), KindConsumerOrder)
	// In a new generation the new owner starts from the committed offset: re-reading is fine.
	h.Consumed[3].Generation = 2
	only(t, Check(h))
}

func TestCheckAssignment(t *testing.T) {
	h := hist()
	h.Assigns = append(h.Assigns,
		Assignment{Member: "m2", Generation: 2, Partitions: []int32{1}, Time: at(30)},
		Assignment{Member: "m1", Generation: 2, Partitions: []int32{0}, Time: at(30)},
		Assignment{Member: "m1", Generation: 2, Partitions: []int32{0, 1}, Time: at(31), Revoked: true},
	)
	only(t, Check(h))
	h.Assigns = append(h.Assigns, Assignment{Member: "m3", Generation: 2, Partitions: []int32{1}, Time: at(32)})
	r := Check(h)
	only(t, r, KindAssignment)
	if r.Violations[0].Partition != 1 || !strings.Contains(r.Violations[0].Detail, "m2 and m3") {
		t.Fatalf("violation %+v", r.Violations[0])
	}
}

func TestCheckCommitBackwards(t *testing.T) {
	h := hist()
	h.Committed = append(h.Committed, CommittedOffset{Partition: 1, Offset: 0, Time: at(7)}, CommittedOffset{Partition: 0, Offset: 2, Time: at(8)})
	r := Check(h)
	only(t, r, KindCommitBackward)
	if r.Violations[0].Offset != 2 || len(r.Violations[0].Windows) != 1 {
		t.Fatalf("violation %+v", r.Violations[0])
	}
}

func TestCheckFinalReadIncomplete(t *testing.T) {
	h := hist()
	h.Final[1] = h.Final[1][:1]
	h.FinalErr[1] = "read up to offset 0 within 1m0s; the end marker is at offset 2"
	// Partition 1's acknowledgement at offset 1 is beyond what was read: not called lost, the
	// incomplete read is the violation.
	only(t, Check(h), KindFinalRead)
}

func TestValueRoundTrip(t *testing.T) {
	v := Value{Run: "abc-12", Producer: 3, Partition: 17, Seq: 123456}
	got, ok := ParseValue([]byte(v.String()))
	if !ok || got != v {
		t.Fatalf("ParseValue(%q) = %+v, %v", v.String(), got, ok)
	}
	for _, bad := range []string{"", "chaos/x", "chaos/r/a/1/2", "other/r/1/2/3", "chaos/r/1/2/3/4"} {
		if _, ok := ParseValue([]byte(bad)); ok {
			t.Fatalf("ParseValue(%q) accepted", bad)
		}
	}
}

func TestReports(t *testing.T) {
	h := hist()
	h.Final[0][2].Raw = "chaos/r/9/0/0"
	h.Errors = append(h.Errors, ProduceError{Value: Value{Run: "r"}, Time: at(4), Err: "NOT_ENOUGH_REPLICAS"})
	r := Check(h)
	var txt bytes.Buffer
	WriteText(&txt, h, r)
	out := txt.String()
	if !strings.HasPrefix(out, "FAIL: 2 violations\n") || !strings.Contains(out, "during #1 kill-leader broker 2") ||
		!strings.Contains(out, "#1 kill-leader broker 2: +3.500s to +10.000s") {
		t.Fatalf("text report:\n%s", out)
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, h, r); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, want := range []string{"<svg", "FAIL: 2 violations", "#1 kill-leader b2", "chaos/r/0/0/2", "acknowledgement latency", "<polyline"} {
		if !strings.Contains(page, want) {
			t.Fatalf("HTML report lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "src=") || strings.Contains(page, "href=") {
		t.Fatal("the report must be self-contained")
	}
	var js bytes.Buffer
	if err := h.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Acks  []Ack                    `json:"acks"`
		Final map[string][]FinalRecord `json:"final"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Acks) != 5 || back.Acks[4].Value != h.Acks[4].Value || len(back.Final["0"]) != 4 || back.Final["0"][2].Raw != "chaos/r/9/0/0" {
		t.Fatalf("history JSON: %s", js.String())
	}
}
