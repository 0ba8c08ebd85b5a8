package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Step is one planned fault. The schedule is a pure function of the seed and the options:
// the same seed gives the same steps. What a step hits is decided when it runs, from Pick and
// the cluster's state then (Metadata): "the leader of partition Pick mod partitions", "broker
// number Pick mod live brokers" — so a replay draws the same choices, and the window's Detail
// says which broker they named.
type Step struct {
	Seq    int
	At     time.Duration // planned start, from the start of Run; a step never starts before the previous one was undone
	Action string        // a fault name
	Pick   uint64        // the draw that chooses the target
}

func (s Step) String() string {
	return fmt.Sprintf("#%d at +%v: %s (pick %#x)", s.Seq, s.At, s.Action, s.Pick)
}

// scheduleStream separates the schedule's random stream from the workload's, which uses the
// same seed.
const scheduleStream = 0x63_68_61_6f_73 // "chaos"

// Schedule plans the faults of a run: one every interval starting at interval, drawn from
// faults, as long as the fault (length) ends before duration. duration 0 plans max steps.
func Schedule(seed int64, faults []string, interval, length, duration time.Duration, max int) []Step {
	if len(faults) == 0 || interval <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), scheduleStream))
	var out []Step
	for k := 1; max <= 0 || len(out) < max; k++ {
		at := time.Duration(k) * interval
		if duration > 0 && at+length > duration {
			break
		}
		if duration <= 0 && max <= 0 {
			break
		}
		out = append(out, Step{Seq: k, At: at, Action: faults[r.IntN(len(faults))], Pick: r.Uint64()})
	}
	return out
}

// FormatSchedule is the schedule as printed before a run starts, one step a line.
func FormatSchedule(seed int64, steps []Step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "fault schedule (seed %d, %d faults):\n", seed, len(steps))
	for _, s := range steps {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	return b.String()
}

// pickOf chooses one of n candidates with a step's draw.
func pickOf(pick uint64, n int) int {
	if n <= 0 {
		return -1
	}
	return int(pick % uint64(n))
}
