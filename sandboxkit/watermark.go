package sandboxkit

import (
	"context"
	"fmt"
	"sync"
)

// Watermark bounds what the sandbox holds in memory — bytes of streamed
// answers not yet released, or results not yet sent — by hysteresis: once the
// level reaches High, Acquire blocks until Release brings it down to Low.
// Stopping at High and resuming only at Low (not just under High) keeps a
// sandbox near its bound from flapping between blocking and running on every
// small release.
//
// The level may exceed High by what is added before the pause takes hold:
// an Add never waits (a call already streaming must finish, and be released,
// rather than stall holding memory), and concurrent Acquires that passed Wait
// together all add. For the Client the bound is High plus MaxResponseBytes
// for each call in flight.
type Watermark struct {
	low, high int64

	mu     sync.Mutex
	level  int64
	paused bool
	resume chan struct{} // closed when a pause ends
}

// NewWatermark pauses at high and resumes at low.
func NewWatermark(low, high int64) (*Watermark, error) {
	if low < 0 || high <= low {
		return nil, fmt.Errorf("watermark: low %d, high %d: need 0 ≤ low < high", low, high)
	}
	return &Watermark{low: low, high: high, resume: make(chan struct{})}, nil
}

// Acquire waits while paused, then adds n: for what a caller takes before it
// starts (a pending result, a call's admission).
func (w *Watermark) Acquire(ctx context.Context, n int64) error {
	if err := w.Wait(ctx); err != nil {
		return err
	}
	w.Add(n)
	return nil
}

// Wait blocks while the level is paused (it reached High and has not yet
// fallen to Low), or until ctx ends.
func (w *Watermark) Wait(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.paused {
		ch := w.resume
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			w.mu.Lock()
			return fmt.Errorf("watermark: waiting for the level to fall to %d: %w", w.low, ctx.Err())
		}
		w.mu.Lock()
	}
	return nil
}

// Add adds n without waiting: for bytes arriving on a call already admitted,
// which must finish (and be released) rather than stall holding memory.
func (w *Watermark) Add(n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.level += n
	if w.level >= w.high {
		w.paused = true
	}
}

// Release takes n off the level, ending a pause once it is at or below Low.
func (w *Watermark) Release(n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.level = max(w.level-n, 0)
	if w.paused && w.level <= w.low {
		w.paused = false
		close(w.resume)
		w.resume = make(chan struct{})
	}
}

// Level is what is held now; Paused whether Acquire blocks.
func (w *Watermark) Level() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.level
}

func (w *Watermark) Paused() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paused
}
