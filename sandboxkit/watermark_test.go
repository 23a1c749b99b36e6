package sandboxkit

import (
	"context"
	"testing"
	"time"
)

func TestWatermarkHysteresis(t *testing.T) {
	w, err := NewWatermark(40, 100)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 9 {
		if err := w.Acquire(ctx, 10); err != nil {
			t.Fatal(err)
		}
	}
	if w.Paused() {
		t.Fatal("paused at 90, under the high mark 100")
	}
	w.Add(15) // a call already admitted is never refused: 105
	if !w.Paused() || w.Level() != 105 {
		t.Fatalf("level %d paused %v; want 105 and paused", w.Level(), w.Paused())
	}

	acquired := make(chan struct{})
	go func() {
		if err := w.Acquire(ctx, 10); err != nil {
			t.Error(err)
		}
		close(acquired)
	}()
	// Under the high mark but above the low one: still paused.
	w.Release(50) // 55
	if !w.Paused() {
		t.Fatal("resumed at 55, above the low mark 40")
	}
	select {
	case <-acquired:
		t.Fatal("Acquire went through at 55, above the low mark")
	default:
	}
	w.Release(15) // 40: at the low mark
	<-acquired    // resumes; a hang here fails the test by its timeout
	if w.Paused() || w.Level() != 50 {
		t.Errorf("after resuming: level %d paused %v; want 50, running", w.Level(), w.Paused())
	}
}

func TestWatermarkWaitEndsWithContext(t *testing.T) {
	w, _ := NewWatermark(0, 1)
	w.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := w.Acquire(ctx, 5); err == nil {
		t.Fatal("Acquire while paused returned nil after its context ended")
	}
	if w.Level() != 1 {
		t.Errorf("level %d after a cancelled Acquire, want 1: it must add nothing", w.Level())
	}
}

func TestNewWatermarkRejects(t *testing.T) {
	for _, c := range [][2]int64{{10, 10}, {-1, 5}, {20, 10}} {
		if _, err := NewWatermark(c[0], c[1]); err == nil {
			t.Errorf("low %d high %d accepted", c[0], c[1])
		}
	}
}
