package status

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/cliout"
	"github.com/evalsched/evalsched/internal/forecast"
)

// JobsText is "2 waiting, 1 running, 7 succeeded of 10; 3 provider
// retries; parts 2/3 arrived", naming only the states some job is in.
func JobsText(r BatchRow) string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{r.Waiting, "waiting"}, {r.Starting, "starting"}, {r.Running, "running"}, {r.Succeeded, "succeeded"}, {r.Failed, "failed"}, {r.Cancelled, "cancelled"}, {r.Skipped, "skipped"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	text := strings.Join(parts, ", ") + fmt.Sprintf(" of %d", r.Registered)
	if r.ProviderRetries > 0 {
		text += fmt.Sprintf("; %d provider retries", r.ProviderRetries)
	}
	if r.PartsExpected > 0 {
		text += fmt.Sprintf("; parts %d/%d arrived", r.PartsArrived, r.PartsExpected)
	}
	return text
}

// admittedOf prints "412/1000 (41%)": admitted of registered.
func admittedOf(admitted, registered int) string {
	if registered <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d (%d%%)", admitted, registered, admitted*100/registered)
}

// concText shows the provider's concurrency as the operator set it and as
// the controller learned it from the gateway, with how long ago (ageS < 0:
// no time): "250 set", "240 learned 3m ago", "250 set, 240 learned 3m
// ago", "-".
func concText(set int, seen, ageS float64) string {
	var parts []string
	if set > 0 {
		parts = append(parts, fmt.Sprintf("%d set", set))
	}
	if seen > 0 {
		when := "at no time given"
		if ageS >= 0 {
			when = cliout.Human(ageS) + " ago"
		}
		parts = append(parts, fmt.Sprintf("%.0f learned %s", seen, when))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// targetText is the DEPTH/TARGET column's target: the one the controller
// steers to, and the operator's beside it when the bound lowered it
// ("2 of 40": at most 5 % of the jobs running).
func targetText(steer, operator float64) string {
	if steer < operator {
		return fmt.Sprintf("%s of %s", num(steer), num(operator))
	}
	return num(operator)
}

// num prints a depth without noise: 3, 40, 2.5.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

// freshText says how the limit controller uses a learned concurrency.
func freshText(m ModelView) string {
	switch {
	case m.SeenConc <= 0:
		return ""
	case m.SeenConcFresh:
		return " (fresh: used as a set one, its knee reached in one raise)"
	}
	return " (old: its knee bounds raises of ×4 at most; edit or delete learned_concurrency on the model's state item to correct it)"
}

// etaText is a batch's ETA cell: "starts by 1h20m, done ~2h"; "-" unknown.
func etaText(e forecast.ETA, pass time.Duration) string {
	if e.StartS < 0 {
		return "-"
	}
	start := "starts by " + cliout.Human(e.StartS)
	if e.StartS <= pass.Seconds() {
		start = "starts next pass"
	}
	if e.DoneS < 0 {
		return start
	}
	return start + ", done ~" + cliout.Human(e.DoneS)
}

// forecastText is why's line on a batch's forecast, naming why it is unknown.
func forecastText(e forecast.ETA, pass time.Duration, m ModelView) string {
	switch {
	case e.StartS >= 0 && e.DoneS < 0:
		return etaText(e, pass) + "; done unknown: the model has no recent run time to go by"
	case e.StartS >= 0:
		return etaText(e, pass)
	case m.Malformed != "":
		return "unknown while the model item is malformed"
	case m.NoItem:
		return "unknown: the model has no model item"
	case !m.Enabled || strings.Contains(m.Why, "model disabled"):
		return "unknown while the model is disabled"
	case m.Breaker != "" && m.Breaker != "CLOSED":
		return "unknown while the breaker is " + strings.ToLower(m.Breaker)
	case m.EndedPerMin <= 0:
		return "unknown: none of the model's jobs ended in the last 5 minutes, so there is no rate to forecast with"
	default:
		return "unknown: not all started within 7 days at the model's recent rate"
	}
}
