// Package chaos is `samsa chaos`: a workload against any Kafka-protocol cluster, faults applied
// to it on a seeded schedule, and a checker that proves or refutes the cluster's guarantees
// from what the clients saw.
package chaos

import (
	"context"
	"time"
)

// FaultWindow is one fault as applied: from Start (the action began) to End (it was undone,
// or ended by itself, e.g. a killed broker restarted). The checker and the report place every
// violation and every error in the windows that were open when it happened.
type FaultWindow struct {
	Seq    int       `json:"seq"`
	Action string    `json:"action"` // e.g. "kill-leader", "pause-controller", "expire-zk-session"
	Broker int32     `json:"broker"` // the broker it hit; -1 when none (e.g. a hook without one)
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`    // zero while open
	Detail string    `json:"detail"` // what was done: signal, command line, partition chosen
	Err    string    `json:"err,omitempty"`
}

// Injector applies faults until ctx is done or its schedule ends, then undoes what is still
// applied (restarts killed brokers, resumes paused ones, heals cut connections) before Run
// returns. Windows may be called at any time from other goroutines.
type Injector interface {
	Run(ctx context.Context) error
	Windows() []FaultWindow
}
