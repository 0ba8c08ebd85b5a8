// Package mutation holds deliberate bugs, each behind a switch that is off in production. The
// deterministic simulation (integration/sim) and `samsa chaos` switch them on to prove that they
// catch the failures these bugs cause; a checker that stays green with a switch on is broken.
//
// Only Go code (a test) can turn a switch on, or a binary built with the samsa_mutations build
// tag, which reads the SAMSA_MUTATIONS environment variable at start-up (env.go). A normal build
// cannot be made unsafe by its environment.
package mutation

import "sync/atomic"

var (
	// SkipEpochTruncation: a follower that learns of a new leader epoch keeps its log instead
	// of truncating it to where its last epoch ends on the leader (KIP-101/KIP-279), so
	// divergent records stay below the high watermark.
	SkipEpochTruncation atomic.Bool
	// ElectOutsideISR: a clean leader election may choose a live replica outside the ISR, as
	// if unclean.leader.election.enable were true but without counting as unclean.
	ElectOutsideISR atomic.Bool
	// HWIgnoresISR: the leader moves the high watermark to its own log end without waiting for
	// the ISR, so acks=all is answered before the followers have the record.
	HWIgnoresISR atomic.Bool
)

// byName maps the names SAMSA_MUTATIONS and tests use to the switches.
var byName = map[string]*atomic.Bool{
	"skip-epoch-truncation": &SkipEpochTruncation,
	"elect-outside-isr":     &ElectOutsideISR,
	"hw-ignores-isr":        &HWIgnoresISR,
}

// Names lists the known mutations.
func Names() []string {
	return []string{"skip-epoch-truncation", "elect-outside-isr", "hw-ignores-isr"}
}

// Set turns the named mutation on or off; it reports false for an unknown name.
func Set(name string, on bool) bool {
	b, ok := byName[name]
	if ok {
		b.Store(on)
	}
	return ok
}

// Reset turns every mutation off.
func Reset() {
	for _, b := range byName {
		b.Store(false)
	}
}
