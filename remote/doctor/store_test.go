package doctor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/vlogs"
)

func TestStoreChecks(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 40, 0, 0, time.UTC)
	s := StoreSurvey{URL: "http://10.0.0.9:9428", LookBack: 24 * time.Hour, At: at, Arrivals: map[string]vlogs.Arrival{
		"gpu1": {Entries: 103, Newest: at.Add(-time.Minute), Unit: 45},
		"gpu2": {Entries: 7, Newest: at.Add(-time.Minute)},
		"gpu3": {Entries: 9, Newest: at.Add(time.Hour), Unit: 2},
	}}
	for _, tc := range []struct {
		host string
		s    StoreSurvey
		want string
	}{
		{"gpu1", s, "✓ log store|✓ uploads 103 entries, 45 of the unit|✓ clock"},
		{"gpu2", s, "✓ log store|! uploads 7 entries|✓ clock"},
		{"gpu3", s, "✓ log store|✓ uploads|! clock the host's newest entry is 1h0m0s ahead"},
		{"gpu4", s, "✓ log store|✗ uploads no entry from _HOSTNAME=gpu4 in the last 24h0m0s"},
		{"gpu1", StoreSurvey{URL: s.URL, Err: errors.New("log store /health: connection refused")}, "✗ log store log store /health: connection refused|· uploads"},
	} {
		rep := &Report{Host: tc.host}
		Store(rep, tc.s)
		var got []string
		for _, c := range rep.Checks {
			got = append(got, c.Status.Mark()+" "+c.Name+" "+c.Detail)
		}
		for i, w := range strings.Split(tc.want, "|") {
			if i >= len(got) || !strings.HasPrefix(got[i], w) {
				t.Errorf("%s: checks %q, want %q", tc.host, got, tc.want)
				break
			}
		}
		if len(got) != len(strings.Split(tc.want, "|")) && tc.host != "gpu4" {
			t.Errorf("%s: %d checks %q", tc.host, len(got), got)
		}
		if tc.host == "gpu4" && !strings.Contains(rep.Checks[1].Fix, "URL=http://10.0.0.9:9428/insert/journald") {
			t.Errorf("fix %q", rep.Checks[1].Fix)
		}
	}
}
