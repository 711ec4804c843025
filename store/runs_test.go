package store

import "testing"

// TestRunPacingString: how the console and the CLI's progress bar say a drain is paced: the mode,
// the rate in force and why, and under automatic pacing what the signal read against its aim.
func TestRunPacingString(t *testing.T) {
	rate := 1200.0
	for _, c := range []struct {
		p    RunPacing
		want string
	}{
		{RunPacing{Mode: "off"}, "off, no limit"},
		{RunPacing{Mode: "max_rate", RateLimit: &rate, Reason: "max_rate"}, "max_rate, 1200 pastes/s: max rate"},
		{RunPacing{Mode: "auto", RateLimit: &rate, Reason: "no_signal"}, "auto, 1200 pastes/s: no signal"},
		{RunPacing{Mode: "auto", RateLimit: &rate, Reason: "at_budget", Signal: 1.381, Aim: 1.44, Source: "users"},
			"auto, 1200 pastes/s: at budget, users' p99 1.38× before (aim 1.44×)"},
		{RunPacing{Mode: "auto", RateLimit: &rate, Reason: "rising", Signal: 1.2, Aim: 1.5, Source: "database"},
			"auto, 1200 pastes/s: rising, finishing latency 1.20× before (aim 1.50×)"},
		// A run report written before this field existed.
		{RunPacing{Mode: "auto", RateLimit: &rate, Reason: "rising", Signal: 1.2, Source: "users"},
			"auto, 1200 pastes/s: rising, users' p99 1.20× before"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}
