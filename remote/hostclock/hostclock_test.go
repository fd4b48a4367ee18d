package hostclock

import (
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		out     string
		want    time.Time
		wantErr bool
	}{
		{out: "1733472000.123456789\n", want: time.Unix(1733472000, 123456789)},
		{out: "1733472000.5", want: time.Unix(1733472000, 500000000)},
		{out: "1733472000.000000001", want: time.Unix(1733472000, 1)},
		{out: "1733472000", want: time.Unix(1733472000, 0)},
		{out: "1733472000.N", wantErr: true},
		{out: "1733472000.%N", wantErr: true},
		{out: "1733472000.1234567890", wantErr: true},
		{out: "", wantErr: true},
		{out: "date: invalid option", wantErr: true},
	} {
		got, err := Parse(c.out)
		if (err != nil) != c.wantErr {
			t.Errorf("Parse(%q) error %v, want error %v", c.out, err, c.wantErr)
			continue
		}
		if !c.wantErr && !got.Equal(c.want) {
			t.Errorf("Parse(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}

func TestMeasure(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, c := range []struct {
		name           string
		sent, received time.Time
		host           time.Time
		want           event.Clock
		wantErr        bool
	}{
		{name: "same clock", sent: t0, received: t0.Add(20 * ms), host: t0.Add(10 * ms),
			want: event.Clock{Offset: 0, RTT: 20 * ms}},
		{name: "host 3 s behind", sent: t0, received: t0.Add(20 * ms), host: t0.Add(10*ms - 3*time.Second),
			want: event.Clock{Offset: -3 * time.Second, RTT: 20 * ms}},
		{name: "host 3 s ahead", sent: t0, received: t0.Add(40 * ms), host: t0.Add(20*ms + 3*time.Second),
			want: event.Clock{Offset: 3 * time.Second, RTT: 40 * ms}},
		// The host read its clock at the trip's start: the guess is off
		// by half the trip, no more.
		{name: "read early", sent: t0, received: t0.Add(100 * ms), host: t0,
			want: event.Clock{Offset: -50 * ms, RTT: 100 * ms}},
		{name: "zero trip", sent: t0, received: t0, host: t0.Add(time.Second),
			want: event.Clock{Offset: time.Second}},
		{name: "received before sent", sent: t0, received: t0.Add(-ms), host: t0, wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Measure(c.sent, c.host, c.received)
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want error %v", err, c.wantErr)
			}
			if got != c.want {
				t.Errorf("Measure = %+v, want %+v", got, c.want)
			}
		})
	}
}
