package sim

import (
	"container/heap"
	"math"
	"time"
)

// eventKind says what happens at an event.
type eventKind uint8

const (
	evBatch    eventKind = iota + 1 // a batch is submitted (arg: batch)
	evChange                        // a provider change lands (arg: index in engine.changes)
	evPin                           // a pin lands (arg: pin)
	evPass                          // a scheduler pass
	evRunTask                       // RunTask is issued at its launch token's time (arg: job)
	evUp                            // a container is running (arg: job)
	evCallEnd                       // a call's service ends (arg: job)
	evCallFail                      // a call fails with a provider error (arg: job)
	evThinkEnd                      // a job is done thinking and sends its next call (arg: job)

	// With faults (policy dynamic only): see internal/sim/faults and invocation.go.
	evInvoke   // EventBridge starts a scheduler invocation (arg: 1 for a duplicate)
	evWake     // a sleeping invocation wakes up (arg: invocation)
	evDeliver  // a task event reaches the task-events function (arg: delivery)
	evIntake   // an SQS message reaches the intake function (arg: delivery)
	evProvider // a provider episode begins or ends (arg: 2·episode + 1 when it ends)
)

// event is one entry of the event queue: 24 bytes, no pointers, so the
// slice-backed heap costs the garbage collector nothing.
type event struct {
	at   time.Duration
	seq  uint64 // ties at the same time go in scheduling order
	arg  int32
	kind eventKind
}

// eventQueue is a binary min-heap on (at, seq) through container/heap. push
// and pop go through heap.Fix rather than heap.Push/Pop so an event is never
// boxed into an interface: no allocation per event.
type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

// Push and Pop satisfy heap.Interface; the engine uses push and pop.
func (q *eventQueue) Push(x any) { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func (q *eventQueue) push(e event) {
	*q = append(*q, e)
	heap.Fix(q, len(*q)-1)
}

func (q *eventQueue) pop() event {
	old := *q
	top := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*q = old[:n]
	if n > 0 {
		heap.Fix(q, 0)
	}
	return top
}

// ring is a growable FIFO of job indices: a model's gateway queue.
type ring struct {
	buf        []int32
	head, size int
}

func (r *ring) len() int { return r.size }

func (r *ring) push(j int32) {
	if r.size == len(r.buf) {
		n := max(2*len(r.buf), 64)
		buf := make([]int32, n)
		for i := range r.size {
			buf[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = buf, 0
	}
	r.buf[(r.head+r.size)%len(r.buf)] = j
	r.size++
}

func (r *ring) pop() int32 {
	j := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return j
}

// at returns the i-th oldest entry.
func (r *ring) at(i int) int32 { return r.buf[(r.head+i)%len(r.buf)] }

// bucket is the Fargate launch token bucket as a GCRA: tat is the
// theoretical arrival time of the next token with an empty bucket. A token
// is free at max(t, tat − (burst−1)·interval), which gives a full burst at
// rest and one token per interval after it, like golang.org/x/time/rate.
type bucket struct {
	interval time.Duration // 1/rate
	burst    int
	tat      time.Duration
}

func newBucket(rate float64, burst int) bucket {
	return bucket{interval: max(seconds(1/rate), 1), burst: burst}
}

// reserve takes the next token at or after now if it comes before deadline,
// and returns its time. A token it cannot give is not taken.
func (b *bucket) reserve(now, deadline time.Duration) (time.Duration, bool) {
	g := max(now, b.tat-time.Duration(b.burst-1)*b.interval)
	if g >= deadline {
		return 0, false
	}
	b.tat = max(b.tat, g) + b.interval
	return g, true
}

// seconds converts seconds to a duration, rounded to the nanosecond (as
// scenario.Dist.Duration does).
func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * 1e9))
}
