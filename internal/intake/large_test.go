package intake_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/evalsched/evalsched/internal/batchmsg"
	"github.com/evalsched/evalsched/internal/intake"
)

// bigMessage returns a valid message of n jobs, each of about 100 bytes.
func bigMessage(t testing.TB, batch string, n int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"version":1,"account":"acme","project":"search-evals","batch":%q,"model":"gpt-5.5","jobs":[`, batch)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"key":"task-%06d","env":{"TASK_ID":"%06d","SPLIT":"test","PROMPT_SET":"mmlu-pro-2026-%06d"}}`, i, i, i)
	}
	b.WriteString("]}")
	if _, err := batchmsg.Parse([]byte(b.String()), batchmsg.DefaultConfig()); err != nil {
		t.Fatalf("the test's message is invalid: %v", err)
	}
	return b.String()
}

// TestLargeMessage: a 10,000-job message of nearly 1 MiB, end to end
// through the Lambda handler into DynamoDB Local. The store writes at least
// 24 jobs per write call, and the invocation's memory is a small multiple
// of the message, none of it kept afterwards.
func TestLargeMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 jobs into DynamoDB Local take ~10 s")
	}
	r := newRig(t)
	const jobs = 10_000
	body := bigMessage(t, "huge", jobs)
	raw := payload(t, events.SQSMessage{MessageId: "big-1", Body: body, EventSource: "aws:sqs",
		Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	h := lambda.NewHandler(r.h.Handle)

	runtime.GC()
	base, baseLive := heapObjects(), read(liveMetric)
	stop := peakHeap()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	out, err := h.Invoke(context.Background(), raw)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	peak, peakLive := stop()
	if err != nil {
		t.Fatal(err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("response %s (%v), want no failures", out, err)
	}

	// Cost: write calls per job.
	calls, byOp := r.db.writeCalls()
	perCall := float64(jobs) / float64(calls)
	t.Logf("%d jobs (%d-byte message) in %v: %d write calls, %.2f jobs per call %v", jobs, len(body), took.Round(time.Millisecond), calls, perCall, byOp)
	if perCall < 24 {
		t.Errorf("%.2f jobs per write call, want at least 24", perCall)
	}
	if got := r.waiting()["acme/search-evals/huge gpt-5.5"]; got != jobs {
		t.Errorf("%d jobs waiting, want %d", got, jobs)
	}
	if got := r.counts(); got != (intake.Counts{Messages: 1, Jobs: jobs}) {
		t.Errorf("metrics %+v, want 1 message, %d jobs", got, jobs)
	}

	// Memory: the peak above the starting heap, everything allocated, and
	// what is left once the garbage is collected.
	runtime.GC()
	kept := int64(heapObjects()) - int64(base)
	allocated := after.TotalAlloc - before.TotalAlloc
	growth, liveGrowth := peak-base, peakLive-baseLive
	size := uint64(len(body))
	t.Logf("memory: live heap peak %.1f MiB above the start (%.0f× the message), heap with garbage %.1f MiB (%.0f×), %.1f MiB allocated in all (%.0f×), %.2f MiB kept",
		mib(liveGrowth), float64(liveGrowth)/float64(size), mib(growth), float64(growth)/float64(size),
		mib(allocated), float64(allocated)/float64(size), float64(kept)/(1<<20))
	if liveGrowth > 48*size {
		t.Errorf("live heap grew %.1f MiB, want at most 48× the %.1f MiB message", mib(liveGrowth), mib(size))
	}
	if growth > 128*size {
		t.Errorf("heap grew %.1f MiB, want at most 128× the %.1f MiB message", mib(growth), mib(size))
	}
	if allocated > 256*size {
		t.Errorf("allocated %.1f MiB, want at most 256× the message", mib(allocated))
	}
	if kept > 2<<20 {
		t.Errorf("%.1f MiB still live after the invocation, want the handler to keep nothing", float64(kept)/(1<<20))
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// The heap: its objects, live and not yet swept; and what the last GC
// found live.
const (
	heapMetric = "/memory/classes/heap/objects:bytes"
	liveMetric = "/gc/heap/live:bytes"
)

func heapObjects() uint64 { return read(heapMetric) }

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakHeap samples the heap every millisecond until the returned function is
// called, which returns the highest values seen: of the heap's objects, and
// of the live heap as the collections found it.
func peakHeap() func() (heap, live uint64) {
	done, result := make(chan struct{}), make(chan [2]uint64)
	go func() {
		var peak [2]uint64
		sample := func() {
			peak[0], peak[1] = max(peak[0], read(heapMetric)), max(peak[1], read(liveMetric))
		}
		sample()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				sample()
				result <- peak
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		p := <-result
		return p[0], p[1]
	}
}
