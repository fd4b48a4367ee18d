package backoff

import (
	"math"
	"testing"
	"time"
)

func TestBackoffSequence(t *testing.T) {
	mid := func() float64 { return 0.5 } // no jitter
	b := New(mid)
	want := []float64{1, 1.6, 2.56, 4.096, 6.5536, 10.48576, 16.777216, 26.8435456, 42.94967296, 68.719476736, 109.9511627776, 120, 120}
	for i, w := range want {
		got := b.Next().Seconds()
		if math.Abs(got-w) > 1e-6 {
			t.Fatalf("step %d: %v, want %v", i, got, w)
		}
	}
	b.Reset()
	if got := b.Next(); got != time.Second {
		t.Fatalf("after Reset: %v", got)
	}
	for _, tc := range []struct {
		r        float64
		min, max float64
	}{{0, 0.8, 0.8}, {0.999999, 1.19, 1.2}} {
		b := New(func() float64 { return tc.r })
		for i := 0; i < 20; i++ {
			base := math.Min(math.Pow(1.6, float64(i)), 120)
			got := b.Next().Seconds()
			if got < math.Min(base*tc.min, 120)-1e-6 || got > math.Min(base*tc.max, 120)+1e-6 {
				t.Fatalf("r=%v step %d: %v not in ±20%% of %v", tc.r, i, got, base)
			}
		}
	}
}
