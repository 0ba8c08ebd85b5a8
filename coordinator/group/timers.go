package group

// timers.go replaces Kafka's heartbeat and rebalance purgatories (DelayedHeartbeat,
// DelayedJoin, InitialDelayedJoin, DelayedSync) with one min-heap of deadlines keyed by
// operation ("hb/<group>/<member>", "join/<group>", "sync/<group>"). One goroutine (run)
// sleeps until the earliest deadline and fires what is due; scheduling under an existing key
// replaces it, which is Kafka's checkAndComplete + tryCompleteElseWatch. One runtime timer
// (time.AfterFunc) set to the earliest deadline drives it once started, so there is no
// long-lived goroutine; tests drive it with a fake clock and FireDue instead.

import (
	"container/heap"
	"sync"
	"time"
)

// Clock is the time source; a fake one makes the state machine's tests deterministic.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// SystemClock is the real clock.
var SystemClock Clock = systemClock{}

type timerEntry struct {
	key      string
	deadline time.Time
	fn       func()
	index    int
}

type timerHeap []*timerEntry

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *timerHeap) Push(x any)        { e := x.(*timerEntry); e.index = len(*h); *h = append(*h, e) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	e.index = -1
	return e
}

// timerQueue is safe for concurrent use; fn runs without the queue's lock.
type timerQueue struct {
	clock Clock
	mu    sync.Mutex
	h     timerHeap
	byKey map[string]*timerEntry
	timer *time.Timer // nil until start; armed for the earliest deadline
	stop  bool
}

func newTimerQueue(clock Clock) *timerQueue {
	return &timerQueue{clock: clock, byKey: map[string]*timerEntry{}}
}

// schedule arms fn at now+d under key, replacing any operation with that key.
func (q *timerQueue) schedule(key string, d time.Duration, fn func()) {
	q.mu.Lock()
	deadline := q.clock.Now().Add(d)
	if e, ok := q.byKey[key]; ok {
		e.deadline, e.fn = deadline, fn
		heap.Fix(&q.h, e.index)
	} else {
		e := &timerEntry{key: key, deadline: deadline, fn: fn}
		heap.Push(&q.h, e)
		q.byKey[key] = e
	}
	q.rearmLocked()
	q.mu.Unlock()
}

// rearmLocked points the runtime timer at the earliest deadline.
func (q *timerQueue) rearmLocked() {
	if q.timer == nil || q.stop || len(q.h) == 0 {
		return
	}
	q.timer.Reset(max(time.Until(q.h[0].deadline), 0))
}

// start arms the runtime timer; stop disarms it for good.
func (q *timerQueue) start() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil || q.stop {
		return
	}
	q.timer = time.AfterFunc(time.Hour, func() {
		q.FireDue()
		q.mu.Lock()
		q.rearmLocked()
		q.mu.Unlock()
	})
	q.rearmLocked()
}

func (q *timerQueue) shutdown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stop = true
	if q.timer != nil {
		q.timer.Stop()
	}
}

// cancel removes the operation under key, if any.
func (q *timerQueue) cancel(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.byKey[key]; ok {
		heap.Remove(&q.h, e.index)
		delete(q.byKey, key)
	}
}

// has reports whether an operation is armed under key.
func (q *timerQueue) has(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.byKey[key]
	return ok
}

// FireDue runs every operation whose deadline is not after now, earliest first; operations
// they schedule that are already due run too. It returns the next deadline (zero if none).
func (q *timerQueue) FireDue() time.Time {
	for {
		q.mu.Lock()
		now := q.clock.Now()
		if len(q.h) == 0 {
			q.mu.Unlock()
			return time.Time{}
		}
		e := q.h[0]
		if e.deadline.After(now) {
			q.mu.Unlock()
			return e.deadline
		}
		heap.Pop(&q.h)
		delete(q.byKey, e.key)
		q.mu.Unlock()
		e.fn()
	}
}
