package cache

import (
	"testing"
	"time"
)

// TestReservationOf: reserveScript's replies read as reservations, and a reply of any other shape
// is an error, never a wait made up for it.
func TestReservationOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reply []any
		want  Reservation
	}{
		{[]any{int64(1), "0.25"}, Reservation{Taken: true, Wait: 250 * time.Millisecond}},
		{[]any{int64(0), "1.5"}, Reservation{Wait: 1500 * time.Millisecond}},
	} {
		if got, err := reservationOf(tc.reply); err != nil || got != tc.want {
			t.Errorf("reply %v: got %+v, %v; want %+v", tc.reply, got, err, tc.want)
		}
	}
	for _, reply := range [][]any{nil, {int64(1)}, {"1", "0.25"}, {int64(1), int64(0)}, {int64(1), "soon"}} {
		if got, err := reservationOf(reply); err == nil {
			t.Errorf("reply %v: got %+v, want an error", reply, got)
		}
	}
}
