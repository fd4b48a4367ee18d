package timegrid

import (
	"testing"
	"time"
)

func TestAlign(t *testing.T) {
	base := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		now      time.Time
		d, grain time.Duration
		want     time.Duration
	}{
		{"already on the grid", base, 15 * time.Second, time.Second, 15 * time.Second},
		{"rounded up to the next second", base.Add(300 * time.Millisecond), 15 * time.Second, time.Second, 15*time.Second + 700*time.Millisecond},
		{"one nanosecond past", base.Add(time.Nanosecond), time.Second, time.Second, 2*time.Second - time.Nanosecond},
		{"zero wait lands on the grid", base.Add(250 * time.Millisecond), 0, time.Second, 750 * time.Millisecond},
		{"no grain: as it is", base.Add(300 * time.Millisecond), 15 * time.Second, 0, 15 * time.Second},
		{"a coarser grain", base.Add(1200 * time.Millisecond), 30 * time.Second, 5 * time.Second, 33*time.Second + 800*time.Millisecond},
		{"before 1970", time.Unix(-1, 400_000_000), 0, time.Second, 600 * time.Millisecond},
	} {
		got := Align(tc.now, tc.d, tc.grain)
		if got != tc.want {
			t.Errorf("%s: Align(%s, %s, %s) = %s, want %s", tc.name, tc.now.Format(time.RFC3339Nano), tc.d, tc.grain, got, tc.want)
		}
		if tc.grain > 0 && tc.now.Add(got).UnixNano()%int64(tc.grain) != 0 {
			t.Errorf("%s: %s is off the grid", tc.name, tc.now.Add(got).Format(time.RFC3339Nano))
		}
		if got < tc.d || (tc.grain > 0 && got >= tc.d+tc.grain) {
			t.Errorf("%s: %s is not within a grain after %s", tc.name, got, tc.d)
		}
	}
}

func TestFor(t *testing.T) {
	for _, tc := range []struct{ period, want time.Duration }{
		{15 * time.Second, time.Second},
		{30 * time.Second, time.Second},
		{2 * time.Second, 500 * time.Millisecond},
		{100 * time.Millisecond, 25 * time.Millisecond},
		{0, 0},
		{-time.Second, 0},
	} {
		if got := For(tc.period); got != tc.want {
			t.Errorf("For(%s) = %s, want %s", tc.period, got, tc.want)
		}
	}
}
