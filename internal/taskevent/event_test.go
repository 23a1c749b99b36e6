package taskevent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeFixtures(t *testing.T) {
	cases := []struct {
		file   string
		kind   Kind
		exit   int // -1: none
		reason string
	}{
		{"ecs-provisioning.json", Ignored, -1, ""},
		{"ecs-running.json", Started, -1, ""},
		{"ecs-stopped-exit0.json", Succeeded, 0, ""},
		{"ecs-stopped-exit1.json", Failed, 1, "exit code 1"},
		{"ecs-stopped-provider-error.json", ProviderFailed, 75, "provider error"},
		{"ecs-spot-interruption.json", Infrastructure, -1, "SpotInterruption"},
		{"ecs-failed-to-start.json", Infrastructure, -1, "CannotPullContainerError"},
		{"ecs-stopped-cancelled.json", Cancelled, -1, "cancelled by an operator"}, // its exit 143 is the SIGTERM's
		{"ecs-stopped-yielded.json", Yielded, -1, YieldReason},                    // stopped before its container ran
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			ev, err := Decode(fixture(t, c.file), Config{})
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != c.kind || ev.JobID != "5b0e8a9c1d2f3a4b5c6d7e8f9a0b1c2d" || ev.Attempt != 1 {
				t.Errorf("got %s job %s attempt %d, want %s of the fixture's job, attempt 1", ev.Kind, ev.JobID, ev.Attempt, c.kind)
			}
			if got := -1; ev.ExitCode != nil {
				got = *ev.ExitCode
				if got != c.exit {
					t.Errorf("got exit %d, want %d", got, c.exit)
				}
			} else if c.exit != -1 {
				t.Errorf("got no exit code, want %d", c.exit)
			}
			if !strings.Contains(ev.Reason, c.reason) {
				t.Errorf("got reason %q, want it to contain %q", ev.Reason, c.reason)
			}
			if ev.At.IsZero() || ev.Version == 0 {
				t.Errorf("got time %v version %d, want both set", ev.At, ev.Version)
			}
		})
	}
}

func TestDecodeSkipsOtherTasks(t *testing.T) {
	if _, err := Decode(fixture(t, "ecs-not-evalsched.json"), Config{}); !errors.Is(err, ErrNotOurs) {
		t.Errorf("got %v, want ErrNotOurs", err)
	}
}

func TestDecodeRejectsOtherEvents(t *testing.T) {
	for name, raw := range map[string]string{
		"not json":        `{`,
		"other source":    `{"source":"aws.ec2","detail-type":"EC2 Instance State-change Notification","detail":{}}`,
		"no task arn":     `{"source":"aws.ecs","detail-type":"ECS Task State Change","detail":{}}`,
		"bad attempt":     `{"source":"aws.ecs","detail-type":"ECS Task State Change","detail":{"taskArn":"a","startedBy":"j","overrides":{"containerOverrides":[{"environment":[{"name":"EVALSCHED_ATTEMPT","value":"x"}]}]}}}`,
		"detail is array": `{"source":"aws.ecs","detail-type":"ECS Task State Change","detail":[]}`,
	} {
		if _, err := Decode([]byte(raw), Config{}); err == nil || errors.Is(err, ErrNotOurs) {
			t.Errorf("%s: got %v, want a decoding error", name, err)
		}
	}
}

// TestClassifyYield: the scheduler's stop with YieldReason is Yielded
// whatever the container's exit (none before it ran; 143 or even 0 when
// the stop landed as it began); a stop by a user with another reason, or
// the yield's reason under another stop code, is judged as before.
func TestClassifyYield(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, cs := range [][]Container{nil, {{Name: "sandbox"}}, {{Name: "sandbox", ExitCode: code(143)}}, {{Name: "sandbox", ExitCode: code(0)}}} {
		kind, exit, reason := Classify("UserInitiated", YieldReason, cs, Config{})
		if kind != Yielded || exit != nil || reason != YieldReason {
			t.Errorf("containers %+v: got %s, %v, %q; want yielded, no exit code, the yield's reason", cs, kind, exit, reason)
		}
	}
	if len(YieldReason) > 255 {
		t.Errorf("YieldReason is %d characters; ECS takes at most 255", len(YieldReason))
	}
	for _, c := range []struct {
		stopCode, reason string
		cs               []Container
		want             Kind
	}{
		{"UserInitiated", "stopped by hand", nil, Failed},
		{"UserInitiated", "stopped by hand", []Container{{ExitCode: code(143)}}, Failed},
		{"UserInitiated", YieldReason + " ", nil, Failed},
		{"UserInitiated", CancelReason, nil, Cancelled},
		{"TaskFailedToStart", YieldReason, nil, Infrastructure},
		{"EssentialContainerExited", YieldReason, []Container{{ExitCode: code(0)}}, Succeeded},
	} {
		if kind, _, _ := Classify(c.stopCode, c.reason, c.cs, Config{}); kind != c.want {
			t.Errorf("%s %q: got %s, want %s", c.stopCode, c.reason, kind, c.want)
		}
	}
}

func TestProviderErrorCodesAreConfigurable(t *testing.T) {
	ev, err := Decode(fixture(t, "ecs-stopped-exit1.json"), Config{ProviderErrorCodes: []int{1}})
	if err != nil || ev.Kind != ProviderFailed {
		t.Errorf("got %s, %v; want exit 1 counted as a provider failure", ev.Kind, err)
	}
}

// FuzzDecode: no panic, and every accepted event names a job and an attempt.
func FuzzDecode(f *testing.F) {
	for _, n := range []string{"ecs-running.json", "ecs-stopped-exit0.json", "ecs-spot-interruption.json", "ecs-not-evalsched.json"} {
		f.Add(fixture(f, n))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := Decode(raw, Config{})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if ev.JobID == "" || ev.Attempt < 1 || ev.TaskARN == "" || ev.Kind == "" {
			t.Fatalf("accepted an event without job, attempt, task or kind: %+v", ev)
		}
	})
}
