package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Value is what a workload record carries: the run it belongs to, the producer that sent
// it, the partition it was sent to and that producer's sequence number on that partition.
// Sequence numbers start at 0 and are never reused, so (Producer, Partition, Seq) names one
// record; a transaction that aborts leaves a gap.
type Value struct {
	Run       string
	Producer  int
	Partition int32
	Seq       int64
}

// String is the record value as written: "chaos/<run>/<producer>/<partition>/<seq>". The key
// is the same without the sequence number, so one producer's records of one partition share
// a key.
func (v Value) String() string {
	return fmt.Sprintf("chaos/%s/%d/%d/%d", v.Run, v.Producer, v.Partition, v.Seq)
}

// Key is the record key: the producer and partition.
func (v Value) Key() string { return fmt.Sprintf("chaos/%s/%d/%d", v.Run, v.Producer, v.Partition) }

// ParseValue reads a record value written by Value.String; ok is false for anything else
// (records of other programs, or the end markers, whose producer is EndMarkerProducer).
func ParseValue(b []byte) (Value, bool) {
	rest, ok := strings.CutPrefix(string(b), "chaos/")
	if !ok {
		return Value{}, false
	}
	f := strings.Split(rest, "/")
	if len(f) != 4 {
		return Value{}, false
	}
	p, err1 := strconv.Atoi(f[1])
	part, err2 := strconv.ParseInt(f[2], 10, 32)
	seq, err3 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Value{}, false
	}
	return Value{Run: f[0], Producer: p, Partition: int32(part), Seq: seq}, true
}

// EndMarkerProducer is the producer number of the end markers: one record per partition,
// written after the workload stopped, that the final read waits for (see FinalRead).
const EndMarkerProducer = -1

// Ack is one record the cluster acknowledged (acks=all).
type Ack struct {
	Value   Value         `json:"value"`
	Offset  int64         `json:"offset"`
	Time    time.Time     `json:"time"`    // when the acknowledgement arrived
	Latency time.Duration `json:"latency"` // from Produce to the acknowledgement
	Txn     int64         `json:"txn"`     // the producer's transaction number; -1 outside transactions
}

// ProduceError is one record that was not acknowledged: the cluster may or may not have it.
type ProduceError struct {
	Value Value     `json:"value"`
	Time  time.Time `json:"time"`
	Err   string    `json:"err"`
}

// TxnOutcome says how one transaction ended.
type TxnOutcome int

const (
	// TxnUnknown: EndTransaction failed or was never reached; either outcome is allowed.
	TxnUnknown TxnOutcome = iota
	TxnCommitted
	TxnAborted
)

func (o TxnOutcome) String() string {
	switch o {
	case TxnCommitted:
		return "committed"
	case TxnAborted:
		return "aborted"
	}
	return "unknown"
}

// Txn is one transaction of a transactional producer and every record sent in it.
type Txn struct {
	Producer int        `json:"producer"`
	Num      int64      `json:"num"`
	Records  []Value    `json:"records"`
	Outcome  TxnOutcome `json:"outcome"`
	Start    time.Time  `json:"start"`
	Ending   time.Time  `json:"ending"` // when EndTransaction(commit) was called: nothing of it is committed before
	End      time.Time  `json:"end"`
	Err      string     `json:"err,omitempty"`
}

// Consumed is one record a consumer group member polled.
type Consumed struct {
	Value      Value     `json:"value"`
	Raw        string    `json:"raw"`
	Partition  int32     `json:"partition"`
	Offset     int64     `json:"offset"`
	Member     string    `json:"member"`
	Generation int32     `json:"generation"`
	Time       time.Time `json:"time"`
}

// Assignment is the set of partitions a member was given in a generation (eager balancing:
// each assignment is the member's whole share).
type Assignment struct {
	Member     string    `json:"member"`
	Generation int32     `json:"generation"`
	Partitions []int32   `json:"partitions"`
	Time       time.Time `json:"time"`
	Revoked    bool      `json:"revoked"` // an OnPartitionsRevoked/Lost call rather than an assignment
}

// CommittedOffset is the group's committed offset of a partition as the coordinator
// answered an OffsetFetch poll.
type CommittedOffset struct {
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Time      time.Time `json:"time"`
}

// FinalRecord is one record of the final read_committed read of a partition.
type FinalRecord struct {
	Offset int64  `json:"offset"`
	Raw    string `json:"value"`
}

// History is everything the workload saw. The workload's goroutines append to it; the
// checker and the report read it after the run.
type History struct {
	mu        sync.Mutex
	Run       string
	Topic     string
	Start     time.Time
	End       time.Time
	Producers int // idempotent producers are 0..Producers-1; transactional ones follow
	TxnProds  int

	Acks      []Ack
	Errors    []ProduceError
	Txns      []*Txn
	Consumed  []Consumed
	Assigns   []Assignment
	Committed []CommittedOffset
	// Final is the ground truth: every partition read from offset 0 with read_committed up to
	// its end marker. FinalErr says why it is missing or incomplete.
	Final    map[int32][]FinalRecord
	FinalErr map[int32]string
	// OtherErrors are errors outside producing (consumer, admin), by time, for the report.
	OtherErrors []ProduceError
	Windows     []FaultWindow
}

// NewHistory starts an empty history.
func NewHistory(run, topic string) *History {
	return &History{Run: run, Topic: topic, Start: time.Now(), Final: map[int32][]FinalRecord{}, FinalErr: map[int32]string{}}
}

func (h *History) addAck(a Ack) {
	h.mu.Lock()
	h.Acks = append(h.Acks, a)
	h.mu.Unlock()
}

func (h *History) addError(e ProduceError) {
	h.mu.Lock()
	h.Errors = append(h.Errors, e)
	h.mu.Unlock()
}

func (h *History) addOtherError(what string, err error) {
	h.mu.Lock()
	h.OtherErrors = append(h.OtherErrors, ProduceError{Time: time.Now(), Err: what + ": " + err.Error(), Value: Value{Producer: -1}})
	h.mu.Unlock()
}

func (h *History) addTxn(t *Txn) {
	h.mu.Lock()
	h.Txns = append(h.Txns, t)
	h.mu.Unlock()
}

func (h *History) endTxn(t *Txn, o TxnOutcome, err error) {
	h.mu.Lock()
	t.Outcome, t.End = o, time.Now()
	if err != nil {
		t.Err = err.Error()
	}
	h.mu.Unlock()
}

func (h *History) addConsumed(c []Consumed) {
	h.mu.Lock()
	h.Consumed = append(h.Consumed, c...)
	h.mu.Unlock()
}

func (h *History) addAssign(a Assignment) {
	h.mu.Lock()
	h.Assigns = append(h.Assigns, a)
	h.mu.Unlock()
}

func (h *History) addCommitted(c CommittedOffset) {
	h.mu.Lock()
	h.Committed = append(h.Committed, c)
	h.mu.Unlock()
}

// Counts are the totals printed next to the verdict.
type Counts struct {
	Acked, Failed, Consumed, FinalRecords       int
	TxnCommitted, TxnAborted, TxnUnknown        int
	Assignments, CommitPolls, Faults, FaultErrs int
}

// Counts totals the history.
func (h *History) Counts() Counts {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.countsLocked()
}

func (h *History) countsLocked() Counts {
	c := Counts{Acked: len(h.Acks), Failed: len(h.Errors), Consumed: len(h.Consumed), Assignments: len(h.Assigns), CommitPolls: len(h.Committed), Faults: len(h.Windows)}
	for _, recs := range h.Final {
		c.FinalRecords += len(recs)
	}
	for _, t := range h.Txns {
		switch t.Outcome {
		case TxnCommitted:
			c.TxnCommitted++
		case TxnAborted:
			c.TxnAborted++
		default:
			c.TxnUnknown++
		}
	}
	for _, w := range h.Windows {
		if w.Err != "" {
			c.FaultErrs++
		}
	}
	return c
}

// WriteJSON writes the whole history as one JSON object, for analysis after the run.
func (h *History) WriteJSON(w io.Writer) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	final := make(map[string][]FinalRecord, len(h.Final))
	for p, recs := range h.Final {
		final[fmt.Sprint(p)] = recs
	}
	return json.NewEncoder(w).Encode(struct {
		Run         string                   `json:"run"`
		Topic       string                   `json:"topic"`
		Start       time.Time                `json:"start"`
		End         time.Time                `json:"end"`
		Acks        []Ack                    `json:"acks"`
		Errors      []ProduceError           `json:"errors"`
		Txns        []*Txn                   `json:"transactions"`
		Consumed    []Consumed               `json:"consumed"`
		Assigns     []Assignment             `json:"assignments"`
		Committed   []CommittedOffset        `json:"committed"`
		OtherErrors []ProduceError           `json:"other_errors"`
		Windows     []FaultWindow            `json:"faults"`
		Final       map[string][]FinalRecord `json:"final"`
		FinalErr    map[int32]string         `json:"final_errors"`
	}{h.Run, h.Topic, h.Start, h.End, h.Acks, h.Errors, h.Txns, h.Consumed, h.Assigns, h.Committed, h.OtherErrors, h.Windows, final, h.FinalErr})
}
