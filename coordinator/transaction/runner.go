package transaction

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// runner owns every goroutine of the coordinator: loads, marker sends, completion appends,
// timed aborts and the long-lived loops. close cancels ctx (appends and sends in flight end)
// and waits for all of them; after it, nothing new starts.
type runner struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	tasks  sync.WaitGroup // short-lived work (tests wait for it to settle)
	loops  sync.WaitGroup // the long-lived loops started by Start
}

func newRunner() *runner {
	ctx, cancel := context.WithCancel(context.Background())
	return &runner{ctx: ctx, cancel: cancel}
}

// goTask runs fn in a tracked goroutine; false once the runner is closed.
func (r *runner) goTask(fn func(ctx context.Context)) bool {
	return r.start(&r.tasks, fn)
}

// goLoop runs a long-lived fn that returns when ctx is done.
func (r *runner) goLoop(fn func(ctx context.Context)) bool {
	return r.start(&r.loops, fn)
}

func (r *runner) start(wg *sync.WaitGroup, fn func(ctx context.Context)) bool {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false
	}
	wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer wg.Done()
		fn(r.ctx)
	}()
	return true
}

func (r *runner) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.loops.Wait()
	r.tasks.Wait()
}

// kafkaError extracts the Kafka error of err; a timeout is REQUEST_TIMED_OUT, a cancelled
// context (shutdown) NOT_COORDINATOR, anything else UNKNOWN_SERVER_ERROR.
func kafkaError(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut
	}
	if errors.Is(err, context.Canceled) {
		return kerr.NotCoordinator
	}
	return kerr.UnknownServerError
}

func code(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}
