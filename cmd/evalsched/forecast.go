package main

import (
	"strings"
	"time"

	"github.com/evalsched/evalsched/internal/forecast"
)

// The ETA's words; the forecast itself is internal/forecast.

// etaText is a batch's ETA cell: "starts by 1h20m, done ~2h"; "-" unknown.
func etaText(e forecast.ETA, pass time.Duration) string {
	if e.StartS < 0 {
		return "-"
	}
	start := "starts by " + human(e.StartS)
	if e.StartS <= pass.Seconds() {
		start = "starts next pass"
	}
	if e.DoneS < 0 {
		return start
	}
	return start + ", done ~" + human(e.DoneS)
}

// forecastText is why's line on a batch's forecast, naming why it is unknown.
func forecastText(e forecast.ETA, pass time.Duration, m modelView) string {
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
