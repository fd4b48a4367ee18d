package vlogs

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSurvey reads the store's real answers to the survey's two stats
// queries (captured from a 16-host testbed run with gpu99 asked for but
// absent: testdata/survey-all.jsonl and survey-unit.jsonl).
func TestSurvey(t *testing.T) {
	all, unit := lines(t, "survey-all.jsonl"), lines(t, "survey-unit.jsonl")
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			_, _ = w.Write([]byte("OK"))
			return
		}
		q := r.FormValue("query")
		queries = append(queries, q)
		rows := all
		if strings.Contains(q, "_SYSTEMD_UNIT") {
			rows = unit
		}
		for _, l := range rows {
			_, _ = w.Write(append(l, '\n'))
		}
	}))
	defer srv.Close()
	src, err := New(Options{URL: srv.URL, Unit: "sglang.service"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Survey(t.Context(), []string{"gpu1", "gpu3", "gpu99"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	g1, g3 := got["gpu1"], got["gpu3"]
	if g1.Entries != 103 || g1.Unit != 45 || g3.Entries != 209 || g3.Unit != 138 || !g3.Newest.Equal(time.Date(2026, 12, 1, 22, 39, 56, 46136000, time.UTC)) {
		t.Errorf("survey %+v", got)
	}
	if _, ok := got["gpu99"]; ok || len(got) != 2 {
		t.Errorf("gpu99 in %+v", got)
	}
	if len(queries) != 2 || !strings.HasPrefix(queries[0], `_time:86400s _HOSTNAME:in("gpu1","gpu3","gpu99") | stats by (_HOSTNAME) count() as n, max(_time) as newest`) {
		t.Errorf("queries %q", queries)
	}
	srv.Close()
	if _, err := src.Survey(t.Context(), []string{"gpu1"}, time.Hour); err == nil || !strings.Contains(err.Error(), "log store /health") {
		t.Errorf("closed store: %v", err)
	}
}
