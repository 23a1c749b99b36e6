package breaker

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// t0 is aligned to the default 30-s bucket.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func bucket(d time.Duration, ok, failed int) Bucket {
	return Bucket{Start: at(d), OK: ok, Failed: failed}
}

// window builds n buckets of ok and failed jobs each, 30 s apart, the last at t0.
func window(n, ok, failed int) []Bucket {
	var bs []Bucket
	for i := n - 1; i >= 0; i-- {
		bs = append(bs, bucket(-time.Duration(i)*30*time.Second, ok, failed))
	}
	return bs
}

func TestDefaultConfigIsValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
	if got, want := (Config{}).effective(), DefaultConfig(); got != want {
		t.Errorf("Config{}.effective() = %+v, want %+v", got, want)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error; none means valid
	}{
		{name: "zero means defaults", cfg: Config{}},
		{name: "defaults", cfg: DefaultConfig()},
		{name: "threshold one", cfg: Config{Threshold: 1}},
		{name: "bucket equal to window", cfg: Config{Window: time.Minute, Bucket: time.Minute}},
		{name: "threshold above one", cfg: Config{Threshold: 1.5}, want: []string{"breaker: threshold 1.5 is outside (0, 1]"}},
		{name: "threshold negative", cfg: Config{Threshold: -0.1}, want: []string{"threshold -0.1 is outside (0, 1]"}},
		{name: "threshold NaN", cfg: Config{Threshold: math.NaN()}, want: []string{"threshold NaN is outside (0, 1]"}},
		{name: "negative window", cfg: Config{Window: -time.Second}, want: []string{"breaker: window -1s must be positive"}},
		{name: "negative bucket", cfg: Config{Bucket: -time.Second}, want: []string{"breaker: bucket -1s must be positive"}},
		{name: "bucket longer than default window", cfg: Config{Bucket: 10 * time.Minute}, want: []string{"breaker: bucket 10m0s is longer than the window 5m0s"}},
		{name: "negative min samples", cfg: Config{MinSamples: -1}, want: []string{"breaker: min samples -1 must be at least 1"}},
		{name: "negative cooldown", cfg: Config{Cooldown: -time.Minute}, want: []string{"breaker: cooldown -1m0s must be positive"}},
		{name: "negative probes", cfg: Config{Probes: -3}, want: []string{"breaker: probes -3 must be at least 1"}},
		{name: "every broken field is named", cfg: Config{Threshold: 2, Probes: -1}, want: []string{"threshold 2", "probes -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestBucketStart(t *testing.T) {
	epoch := time.Unix(0, 0).UTC()
	tests := []struct {
		name string
		t    time.Time
		d    time.Duration
		want time.Time
	}{
		{name: "aligned", t: at(0), d: 30 * time.Second, want: at(0)},
		{name: "inside a bucket", t: at(29*time.Second + 999*time.Millisecond), d: 30 * time.Second, want: at(0)},
		{name: "next bucket", t: at(30 * time.Second), d: 30 * time.Second, want: at(30 * time.Second)},
		// time.Truncate counts from year 1: for 7 s it would give a different start.
		{name: "relative to the Unix epoch", t: epoch.Add(7*1000*time.Second + 3*time.Second), d: 7 * time.Second, want: epoch.Add(7 * 1000 * time.Second)},
		{name: "before the epoch", t: epoch.Add(-time.Second), d: 7 * time.Second, want: epoch.Add(-7 * time.Second)},
		{name: "before the epoch with nanoseconds", t: epoch.Add(-time.Nanosecond), d: 30 * time.Second, want: epoch.Add(-30 * time.Second)},
		{name: "huge bucket", t: epoch.Add(time.Hour), d: math.MaxInt64, want: epoch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bucketStart(tt.t, tt.d); !got.Equal(tt.want) {
				t.Errorf("bucketStart(%v, %v) = %v, want %v", tt.t, tt.d, got, tt.want)
			}
		})
	}
}

func TestStep(t *testing.T) {
	def := DefaultConfig()
	tests := []struct {
		name string
		cfg  Config
		st   State
		seen Outcomes
		now  time.Time
		want Decision
	}{
		// CLOSED
		{
			name: "zero state is closed",
			now:  at(0),
			want: Decision{State: State{Phase: Closed}, Allow: -1, Reason: "closed"},
		},
		{
			name: "closed folds outcomes into the bucket containing now",
			st:   State{Phase: Closed, Since: at(-time.Hour), Buckets: []Bucket{bucket(0, 3, 1)}},
			seen: Outcomes{OK: 2, ProviderFailed: 1},
			now:  at(29 * time.Second),
			want: Decision{State: State{Phase: Closed, Since: at(-time.Hour), Buckets: []Bucket{bucket(0, 5, 2)}}, Allow: -1, Reason: "closed"},
		},
		{
			name: "closed opens a new bucket at the boundary",
			st:   State{Phase: Closed, Buckets: []Bucket{bucket(0, 3, 1)}},
			seen: Outcomes{OK: 1},
			now:  at(30 * time.Second),
			want: Decision{State: State{Phase: Closed, Buckets: []Bucket{bucket(0, 3, 1), bucket(30*time.Second, 1, 0)}}, Allow: -1, Reason: "closed"},
		},
		{
			name: "closed stays below min samples even if all failed",
			seen: Outcomes{ProviderFailed: 19},
			now:  at(0),
			want: Decision{State: State{Phase: Closed, Buckets: []Bucket{bucket(0, 0, 19)}}, Allow: -1, Reason: "closed"},
		},
		{
			name: "closed stays below threshold",
			seen: Outcomes{OK: 11, ProviderFailed: 9},
			now:  at(0),
			want: Decision{State: State{Phase: Closed, Buckets: []Bucket{bucket(0, 11, 9)}}, Allow: -1, Reason: "closed"},
		},
		{
			name: "closed opens at exactly threshold and min samples",
			seen: Outcomes{OK: 10, ProviderFailed: 10},
			now:  at(0),
			want: Decision{
				State:  State{Phase: Open, Since: at(0), Buckets: []Bucket{bucket(0, 10, 10)}},
				Reason: "open: 10 of 20 jobs failed with provider errors in 5m0s (threshold 50%)",
			},
		},
		{
			name: "closed opens on the sum over the window",
			st:   State{Phase: Closed, Buckets: window(10, 1, 3)[:9]}, // 9 buckets up to t0-30s
			seen: Outcomes{OK: 1, ProviderFailed: 3},
			now:  at(10 * time.Second),
			want: Decision{
				State:  State{Phase: Open, Since: at(10 * time.Second), Buckets: window(10, 1, 3)},
				Reason: "open: 30 of 40 jobs failed with provider errors in 5m0s (threshold 50%)",
			},
		},
		{
			name: "closed clears stray probe counters",
			st:   State{Phase: Closed, ProbesAdmitted: 2, ProbeOK: 1, ProbeFailed: 1},
			now:  at(0),
			want: Decision{State: State{Phase: Closed}, Allow: -1, Reason: "closed"},
		},
		{
			name: "custom threshold and min samples",
			cfg:  Config{Threshold: 0.25, MinSamples: 4},
			seen: Outcomes{OK: 3, ProviderFailed: 1},
			now:  at(0),
			want: Decision{
				State:  State{Phase: Open, Since: at(0), Buckets: []Bucket{bucket(0, 3, 1)}},
				Reason: "open: 1 of 4 jobs failed with provider errors in 5m0s (threshold 25%)",
			},
		},

		// Window expiry
		{
			name: "window: failures still inside the window open it",
			st:   State{Buckets: []Bucket{bucket(0, 0, 20)}},
			now:  at(5*time.Minute - time.Second),
			want: Decision{
				State:  State{Phase: Open, Since: at(5*time.Minute - time.Second), Buckets: []Bucket{bucket(0, 0, 20)}},
				Reason: "open: 20 of 20 jobs failed with provider errors in 5m0s (threshold 50%)",
			},
		},
		{
			name: "window: failures a window old are forgotten",
			st:   State{Buckets: []Bucket{bucket(0, 0, 20)}},
			now:  at(5 * time.Minute),
			want: Decision{State: State{Phase: Closed}, Allow: -1, Reason: "closed"},
		},
		{
			name: "window: only expired buckets are dropped",
			st:   State{Buckets: []Bucket{bucket(0, 0, 15), bucket(30*time.Second, 5, 5), bucket(60*time.Second, 1, 0)}},
			seen: Outcomes{OK: 1, ProviderFailed: 1},
			now:  at(5*time.Minute + 30*time.Second),
			want: Decision{State: State{Phase: Closed, Buckets: []Bucket{bucket(60*time.Second, 1, 0), bucket(5*time.Minute+30*time.Second, 1, 1)}}, Allow: -1, Reason: "closed"},
		},

		// OPEN
		{
			name: "open admits nothing during the cooldown",
			st:   State{Phase: Open, Since: at(0)},
			now:  at(30 * time.Second),
			want: Decision{State: State{Phase: Open, Since: at(0)}, Allow: 0, Reason: "open: half-open in 1m30s"},
		},
		{
			name: "open keeps counting outcomes and says what it sees",
			st:   State{Phase: Open, Since: at(0), Buckets: []Bucket{bucket(0, 6, 34)}},
			seen: Outcomes{ProviderFailed: 2},
			now:  at(time.Minute + 50*time.Second),
			want: Decision{
				State:  State{Phase: Open, Since: at(0), Buckets: []Bucket{bucket(0, 6, 34), bucket(90*time.Second, 0, 2)}},
				Reason: "open: 36 of 42 jobs failed with provider errors in 5m0s; half-open in 10s",
			},
		},
		{
			name: "open turns half-open at the cooldown, clearing buckets and counters",
			st:   State{Phase: Open, Since: at(0), Buckets: []Bucket{bucket(0, 6, 34)}, ProbesAdmitted: 3, ProbeFailed: 2},
			seen: Outcomes{ProviderFailed: 5},
			now:  at(2 * time.Minute),
			want: Decision{
				State:  State{Phase: HalfOpen, Since: at(2 * time.Minute)},
				Allow:  3,
				Reason: "half-open: cooldown 2m0s over, 3 probes left",
			},
		},
		{
			name: "open with a custom cooldown and one probe",
			cfg:  Config{Cooldown: 30 * time.Second, Probes: 1},
			st:   State{Phase: Open, Since: at(0)},
			now:  at(40 * time.Second),
			want: Decision{State: State{Phase: HalfOpen, Since: at(40 * time.Second)}, Allow: 1, Reason: "half-open: cooldown 30s over, 1 probe left"},
		},
		{
			name: "open with a zero Since turns half-open",
			st:   State{Phase: Open},
			now:  at(0),
			want: Decision{State: State{Phase: HalfOpen, Since: at(0)}, Allow: 3, Reason: "half-open: cooldown 2m0s over, 3 probes left"},
		},
		{
			name: "open with a Since in the future restarts the cooldown now",
			st:   State{Phase: Open, Since: at(24 * time.Hour)},
			now:  at(0),
			want: Decision{State: State{Phase: Open, Since: at(0)}, Allow: 0, Reason: "open: half-open in 2m0s"},
		},

		// HALF_OPEN
		{
			name: "half-open allows the probes not yet admitted",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 1},
			now:  at(10 * time.Second),
			want: Decision{State: State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 1}, Allow: 2, Reason: "half-open: 2 probes left"},
		},
		{
			name: "half-open never allows less than zero",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 7},
			now:  at(10 * time.Second),
			want: Decision{State: State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 7}, Allow: 0, Reason: "half-open: 0 probes left"},
		},
		{
			name: "half-open counts outcomes as probes",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3},
			seen: Outcomes{OK: 1, ProviderFailed: 1},
			now:  at(time.Minute),
			want: Decision{
				State:  State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3, ProbeOK: 1, ProbeFailed: 1, Buckets: []Bucket{bucket(time.Minute, 1, 1)}},
				Allow:  0,
				Reason: "half-open: 0 probes left, 1 ok and 1 failed so far",
			},
		},
		{
			name: "half-open closes when all probes succeed",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3, ProbeOK: 2},
			seen: Outcomes{OK: 1},
			now:  at(time.Minute),
			want: Decision{
				State:  State{Phase: Closed, Since: at(time.Minute), Buckets: []Bucket{bucket(time.Minute, 1, 0)}},
				Allow:  -1,
				Reason: "closed: 3 of 3 probes succeeded",
			},
		},
		{
			name: "half-open closes with failures below threshold",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3, ProbeOK: 1, ProbeFailed: 1},
			seen: Outcomes{OK: 1},
			now:  at(time.Minute),
			want: Decision{
				State:  State{Phase: Closed, Since: at(time.Minute), Buckets: []Bucket{bucket(time.Minute, 1, 0)}},
				Allow:  -1,
				Reason: "closed: 2 of 3 probes succeeded",
			},
		},
		{
			name: "half-open reopens when the verdict fails",
			cfg:  Config{Probes: 4, Threshold: 0.75},
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 4, ProbeOK: 1, ProbeFailed: 2},
			seen: Outcomes{ProviderFailed: 1}, // 3 of 4 = 75 %, and early would also fire
			now:  at(time.Minute),
			want: Decision{
				State:  State{Phase: Open, Since: at(time.Minute), Buckets: []Bucket{bucket(time.Minute, 0, 1)}},
				Reason: "open: 3 of 4 probes failed with provider errors (threshold 75%)",
			},
		},
		{
			name: "half-open decides on all outcomes seen, more than the probes",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3},
			seen: Outcomes{OK: 4, ProviderFailed: 1}, // older jobs ended too
			now:  at(time.Minute),
			want: Decision{
				State:  State{Phase: Closed, Since: at(time.Minute), Buckets: []Bucket{bucket(time.Minute, 4, 1)}},
				Allow:  -1,
				Reason: "closed: 4 of 5 probes succeeded",
			},
		},
		{
			name: "half-open reopens early once failures reach probes times threshold",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3, ProbeFailed: 1},
			seen: Outcomes{ProviderFailed: 1},
			now:  at(30 * time.Second),
			want: Decision{
				State:  State{Phase: Open, Since: at(30 * time.Second), Buckets: []Bucket{bucket(30*time.Second, 0, 1)}},
				Reason: "open: 2 of 3 probes failed with provider errors (threshold 50%)",
			},
		},
		{
			name: "half-open waits after one failure of three",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3},
			seen: Outcomes{ProviderFailed: 1},
			now:  at(30 * time.Second),
			want: Decision{
				State:  State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3, ProbeFailed: 1, Buckets: []Bucket{bucket(30*time.Second, 0, 1)}},
				Allow:  0,
				Reason: "half-open: 0 probes left, 0 ok and 1 failed so far",
			},
		},
		{
			name: "half-open waits before the stall timeout",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3},
			now:  at(8*time.Minute - time.Second),
			want: Decision{State: State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3}, Allow: 0, Reason: "half-open: 0 probes left"},
		},
		{
			name: "half-open stalled without outcomes reopens",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3},
			now:  at(8 * time.Minute),
			want: Decision{State: State{Phase: Open, Since: at(8 * time.Minute)}, Reason: "open: no probe ended in 8m0s, trying again"},
		},
		{
			name: "half-open stalled with good partial outcomes closes",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3, ProbeOK: 2},
			now:  at(8 * time.Minute),
			want: Decision{State: State{Phase: Closed, Since: at(8 * time.Minute)}, Allow: -1, Reason: "closed: 2 of 2 ended probes succeeded, the rest still running after 8m0s"},
		},
		{
			name: "half-open stalled with bad partial outcomes reopens",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 3, ProbeFailed: 1},
			now:  at(8 * time.Minute),
			want: Decision{State: State{Phase: Open, Since: at(8 * time.Minute)}, Reason: "open: 1 of 1 ended probes failed with provider errors in 8m0s, trying again"},
		},
		{
			name: "half-open with probes left waits for demand however long",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 1, ProbeOK: 1},
			now:  at(time.Hour),
			want: Decision{State: State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: 1, ProbeOK: 1}, Allow: 2, Reason: "half-open: 2 probes left, 1 ok and 0 failed so far"},
		},

		// Odd states and config
		{
			name: "unknown phase is treated as closed",
			st:   State{Phase: "AJAR", Since: at(-time.Hour), ProbesAdmitted: 2},
			now:  at(0),
			want: Decision{State: State{Phase: Closed, Since: at(0)}, Allow: -1, Reason: `closed; unknown phase "AJAR" treated as closed`},
		},
		{
			name: "unknown phase may still open",
			st:   State{Phase: "closed", Buckets: []Bucket{bucket(0, 0, 20)}},
			now:  at(0),
			want: Decision{
				State:  State{Phase: Open, Since: at(0), Buckets: []Bucket{bucket(0, 0, 20)}},
				Reason: `open: 20 of 20 jobs failed with provider errors in 5m0s (threshold 50%); unknown phase "closed" treated as closed`,
			},
		},
		{
			name: "negative counts read as zero",
			st:   State{Phase: HalfOpen, Since: at(0), ProbesAdmitted: -5, ProbeOK: -1, ProbeFailed: -1, Buckets: []Bucket{bucket(0, -3, 2)}},
			seen: Outcomes{OK: -4, ProviderFailed: -4},
			now:  at(10 * time.Second),
			want: Decision{State: State{Phase: HalfOpen, Since: at(0), Buckets: []Bucket{bucket(0, 0, 2)}}, Allow: 3, Reason: "half-open: 3 probes left"},
		},
		{
			name: "buckets are sorted, re-aligned, merged and emptied ones dropped",
			st: State{Buckets: []Bucket{
				bucket(time.Minute+5*time.Second, 1, 0), bucket(0, 1, 1), bucket(time.Minute, 2, 0), bucket(30*time.Second, 0, 0),
			}},
			now:  at(time.Minute + 10*time.Second),
			want: Decision{State: State{Phase: Closed, Buckets: []Bucket{bucket(0, 1, 1), bucket(time.Minute, 3, 0)}}, Allow: -1, Reason: "closed"},
		},
		{
			name: "buckets from the future merge into the current one",
			st:   State{Buckets: []Bucket{bucket(0, 1, 0), bucket(time.Hour, 2, 5)}},
			seen: Outcomes{OK: 1},
			now:  at(10 * time.Second),
			want: Decision{State: State{Phase: Closed, Buckets: []Bucket{bucket(0, 4, 5)}}, Allow: -1, Reason: "closed"},
		},
		{
			name: "counts saturate instead of overflowing",
			st:   State{Buckets: []Bucket{bucket(0, math.MaxInt, 0)}},
			seen: Outcomes{OK: math.MaxInt},
			now:  at(0),
			want: Decision{State: State{Phase: Closed, Buckets: []Bucket{bucket(0, math.MaxInt, 0)}}, Allow: -1, Reason: "closed"},
		},
		{
			name: "invalid config fields take their defaults",
			cfg:  Config{Window: -1, Bucket: -1, Threshold: 7, MinSamples: -1, Cooldown: -1, Probes: -1},
			seen: Outcomes{OK: 10, ProviderFailed: 10},
			now:  at(0),
			want: Decision{
				State:  State{Phase: Open, Since: at(0), Buckets: []Bucket{bucket(0, 10, 10)}},
				Reason: "open: 10 of 20 jobs failed with provider errors in 5m0s (threshold 50%)",
			},
		},
		{
			name: "a bucket longer than the window is cut to the window",
			cfg:  Config{Window: time.Minute, Bucket: time.Hour},
			st:   State{Buckets: []Bucket{bucket(-time.Minute, 0, 20)}},
			now:  at(0),
			want: Decision{State: State{Phase: Closed}, Allow: -1, Reason: "closed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg == (Config{}) {
				cfg = def
			}
			got := Step(cfg, tt.st, tt.seen, Gateway{}, tt.now)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Step() got\n\t%s\nwant\n\t%s", show(got), show(tt.want))
			}
		})
	}
}

func TestStepDoesNotModifyItsInput(t *testing.T) {
	in := []Bucket{bucket(30*time.Second, 1, 0), bucket(0, 2, 0)}
	st := State{Buckets: in}
	Step(DefaultConfig(), st, Outcomes{OK: 5}, Gateway{}, at(30*time.Second))
	want := []Bucket{bucket(30*time.Second, 1, 0), bucket(0, 2, 0)}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("input buckets after Step got %v, want %v", in, want)
	}
}

func TestAdmitted(t *testing.T) {
	tests := []struct {
		name string
		st   State
		n    int
		want State
	}{
		{name: "half-open counts probes", st: State{Phase: HalfOpen, ProbesAdmitted: 1}, n: 2, want: State{Phase: HalfOpen, ProbesAdmitted: 3}},
		{name: "half-open zero is a no-op", st: State{Phase: HalfOpen, ProbesAdmitted: 1}, n: 0, want: State{Phase: HalfOpen, ProbesAdmitted: 1}},
		{name: "half-open negative is a no-op", st: State{Phase: HalfOpen, ProbesAdmitted: 1}, n: -4, want: State{Phase: HalfOpen, ProbesAdmitted: 1}},
		{name: "half-open saturates", st: State{Phase: HalfOpen, ProbesAdmitted: math.MaxInt}, n: 1, want: State{Phase: HalfOpen, ProbesAdmitted: math.MaxInt}},
		{name: "closed is a no-op", st: State{Phase: Closed}, n: 50, want: State{Phase: Closed}},
		{name: "zero state is a no-op", n: 50, want: State{}},
		{name: "open is a no-op", st: State{Phase: Open}, n: 1, want: State{Phase: Open}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.Admitted(tt.n); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Admitted(%d) got %+v, want %+v", tt.n, got, tt.want)
			}
		})
	}
}

// show prints a Decision with times as offsets from t0.
func show(d Decision) string {
	off := func(t time.Time) string {
		if t.IsZero() {
			return "zero"
		}
		return "t0" + fmt.Sprintf("%+v", t.Sub(t0))
	}
	var bs []string
	for _, b := range d.State.Buckets {
		bs = append(bs, fmt.Sprintf("{%s ok=%d failed=%d}", off(b.Start), b.OK, b.Failed))
	}
	s := d.State
	return fmt.Sprintf("Allow=%d Reason=%q Phase=%q Since=%s Buckets=%v ProbesAdmitted=%d ProbeOK=%d ProbeFailed=%d",
		d.Allow, d.Reason, s.Phase, off(s.Since), bs, s.ProbesAdmitted, s.ProbeOK, s.ProbeFailed)
}

func TestGatewayRate(t *testing.T) {
	on := DefaultConfig()
	on.GatewayThreshold = DefaultGatewayThreshold
	tripped := at(-5 * time.Minute)
	gw := func(rate, calls float64, end time.Duration) Gateway {
		return Gateway{Rate: rate, Calls: calls, At: at(end)}
	}
	// feed steps an OPEN breaker (cooling down until t0+1m) through the
	// datapoints, one pass each, 10 s apart, ending at t0.
	feed := func(cfg Config, st State, gws ...Gateway) Decision {
		var d Decision
		for i, g := range gws {
			d = Step(cfg, st, Outcomes{}, g, at(time.Duration(i-len(gws)+1)*10*time.Second))
			st = d.State
		}
		return d
	}
	open := State{Phase: Open, Since: at(-time.Minute), RateAt: tripped}
	tests := []struct {
		name    string
		cfg     Config
		st      State
		gws     []Gateway
		want    Phase
		allow   int
		reasons string
	}{
		{"20 s of healthy datapoints close an open breaker", on, open,
			[]Gateway{gw(0.05, 4, -40*time.Second), gw(0, 3, -30*time.Second), gw(0.1, 2, -20*time.Second)},
			Closed, -1, "closed: gateway error rate below 20% for 20s over 9 calls"},
		{"one period is not a trend", on, open,
			[]Gateway{gw(0, 40, -20*time.Second)}, Open, 0, "open: half-open in"},
		{"too few calls are not evidence", on, open,
			[]Gateway{gw(0, 1, -40*time.Second), gw(0, 1, -30*time.Second), gw(0, 1, -20*time.Second)}, Open, 0, "open"},
		{"a failing period starts the run again", on, open,
			[]Gateway{gw(0, 9, -50*time.Second), gw(0.5, 9, -40*time.Second), gw(0, 9, -30*time.Second), gw(0, 9, -20*time.Second)},
			Open, 0, "open"},
		{"a datapoint from before the trip is no evidence", on, State{Phase: Open, Since: at(-time.Minute), RateAt: at(-30 * time.Second)},
			[]Gateway{gw(0, 9, -50*time.Second), gw(0, 9, -40*time.Second), gw(0, 9, -30*time.Second)}, Open, 0, "open"},
		{"the same datapoint twice counts once", on, open,
			[]Gateway{gw(0, 9, -30*time.Second), gw(0, 9, -30*time.Second), gw(0, 9, -30*time.Second)}, Open, 0, "open"},
		{"without the metric configured the rate is ignored", DefaultConfig(), open,
			[]Gateway{gw(0, 9, -40*time.Second), gw(0, 9, -30*time.Second), gw(0, 9, -20*time.Second)}, Open, 0, "open"},
		{"a half-open breaker closes on the rate before its probes end", on,
			State{Phase: HalfOpen, Since: at(-2 * time.Minute), RateAt: tripped, ProbesAdmitted: 3},
			[]Gateway{gw(0, 3, -40*time.Second), gw(0, 3, -30*time.Second), gw(0, 3, -20*time.Second)}, Closed, -1, "closed: gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := feed(tt.cfg, tt.st, tt.gws...)
			if d.State.Phase != tt.want || d.Allow != tt.allow || !strings.Contains(d.Reason, tt.reasons) {
				t.Errorf("got %s, Allow %d (%q); want %s, Allow %d (%q)", d.State.Phase, d.Allow, d.Reason, tt.want, tt.allow, tt.reasons)
			}
			if d.State.Phase == Closed && len(d.State.Buckets) != 0 {
				t.Errorf("closed on the gateway with buckets %v, want the outage's failures dropped", d.State.Buckets)
			}
		})
	}
}

func TestHalfOpenWithGatewayReplacesFailedProbes(t *testing.T) {
	on := DefaultConfig()
	on.GatewayThreshold = DefaultGatewayThreshold
	st := State{Phase: HalfOpen, Since: at(-time.Minute), ProbesAdmitted: 3}
	// Two probes failed: without the gateway's rate that reopens the
	// breaker; with it they are replaced.
	d := Step(on, st, Outcomes{ProviderFailed: 2}, Gateway{}, t0)
	if d.State.Phase != HalfOpen || d.Allow != 2 {
		t.Errorf("with the gateway rate: got %s, Allow %d (%s); want HALF_OPEN admitting 2", d.State.Phase, d.Allow, d.Reason)
	}
	d = Step(DefaultConfig(), st, Outcomes{ProviderFailed: 2}, Gateway{}, t0)
	if d.State.Phase != Open {
		t.Errorf("by exit codes: got %s (%s), want OPEN", d.State.Phase, d.Reason)
	}
	// Probes that succeed still close it, should the gateway publish nothing.
	d = Step(on, State{Phase: HalfOpen, Since: at(-time.Minute), ProbesAdmitted: 5, ProbeOK: 1}, Outcomes{OK: 2}, Gateway{}, t0)
	if d.State.Phase != Closed {
		t.Errorf("3 probes succeeded: got %s (%s), want CLOSED", d.State.Phase, d.Reason)
	}
}
