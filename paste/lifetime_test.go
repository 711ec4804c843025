package paste

import (
	"errors"
	"testing"
	"time"
)

func TestExpiryPolicyLifetime(t *testing.T) {
	day := 24 * time.Hour
	policy := ExpiryPolicy{Default: 7 * day, Max: 30 * day}
	withNever := ExpiryPolicy{Default: 0, Max: 365 * day, AllowNever: true}
	tests := []struct {
		in     string
		policy ExpiryPolicy
		want   time.Duration
		bad    bool
	}{
		{"", policy, 7 * day, false},
		{"10m", policy, 10 * time.Minute, false},
		{"1h", policy, time.Hour, false},
		{"1d", policy, day, false},
		{"1w", policy, 7 * day, false},
		{"30d", policy, 30 * day, false},
		{"3600", policy, time.Hour, false},
		{" 2H ", policy, 2 * time.Hour, false},
		{"1h30m", policy, 90 * time.Minute, false},
		{"90min", policy, 90 * time.Minute, false},
		{"never", withNever, 0, false},
		{"", withNever, 0, false},
		{"never", policy, 0, true},
		{"31d", policy, 0, true},
		{"0", policy, 0, true},
		{"-5", policy, 0, true},
		{"500ms", policy, 0, true},
		{"soon", policy, 0, true},
		{"1y", policy, 0, true},
		{"99999999999999999999d", policy, 0, true},
		{"9223372036854775807", policy, 0, true},
	}
	for _, tt := range tests {
		got, err := tt.policy.Lifetime(tt.in)
		var e *ExpiryError
		switch {
		case tt.bad && (err == nil || !errors.As(err, &e) || e.Detail == ""):
			t.Errorf("Lifetime(%q) = %v, %v; want an *ExpiryError that says why", tt.in, got, err)
		case !tt.bad && (err != nil || got != tt.want):
			t.Errorf("Lifetime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestExpiryPolicyValidate(t *testing.T) {
	day := 24 * time.Hour
	if err := (ExpiryPolicy{Default: 0, Max: day}).Validate(); err == nil {
		t.Error("a default of never without allowing never passed")
	}
	if err := (ExpiryPolicy{Default: 2 * day, Max: day}).Validate(); err == nil {
		t.Error("a default past the maximum passed")
	}
	if err := (ExpiryPolicy{Default: day, Max: day}).Validate(); err != nil {
		t.Errorf("a coherent policy failed: %v", err)
	}
}
