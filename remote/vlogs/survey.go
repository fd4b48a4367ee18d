package vlogs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Arrival is what the store holds of one host's journal within a survey's
// look-back.
type Arrival struct {
	Entries    int       // entries of any unit
	Newest     time.Time // the newest of them (the host's clock)
	Unit       int       // entries of the unit (its own and PID 1's about it)
	UnitNewest time.Time
}

// Survey checks that the store answers (/health, then two LogsQL stats
// queries) and returns, per host among hosts (by _HOSTNAME), what arrived
// within lookback. A host with nothing is absent from the map.
func (s *Source) Survey(ctx context.Context, hosts []string, lookback time.Duration) (map[string]Arrival, error) {
	defer s.hold()()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.opts.URL+"/health", nil)
	if err != nil {
		return nil, fmt.Errorf("log store: %w", err)
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("log store /health: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1024))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("log store /health: %s", resp.Status)
	}
	out := map[string]Arrival{}
	for _, chunk := range hostChunks(hosts) {
		if err := s.survey(ctx, chunk, lookback, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// survey adds what arrived of hosts (one filter's worth) to out.
func (s *Source) survey(ctx context.Context, hosts []string, lookback time.Duration, out map[string]Arrival) error {
	filter := fmt.Sprintf("_time:%ds %s", int64(lookback/time.Second), hostFilterOf(hosts))
	for _, unit := range []bool{false, true} {
		query := filter
		if unit {
			query += " " + s.unitFilter()
		}
		query += " | stats by (_HOSTNAME) count() as n, max(_time) as newest"
		err := s.query(ctx, query, func(line []byte) error {
			var row struct {
				Host   string `json:"_HOSTNAME"`
				N      string `json:"n"`
				Newest string `json:"newest"`
			}
			if err := json.Unmarshal(line, &row); err != nil {
				return fmt.Errorf("log store stats row: %w", err)
			}
			n, err := strconv.Atoi(row.N)
			if err != nil {
				return fmt.Errorf("log store stats row: n: %w", err)
			}
			t, err := time.Parse(time.RFC3339Nano, row.Newest)
			if err != nil {
				return fmt.Errorf("log store stats row: newest: %w", err)
			}
			a := out[row.Host]
			if unit {
				a.Unit, a.UnitNewest = n, t
			} else {
				a.Entries, a.Newest = n, t
			}
			out[row.Host] = a
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// UploadFix is what to run on a host whose journal does not reach the
// store at url: systemd's own uploader, pointed at VictoriaLogs' journald
// endpoint (it posts to URL/upload).
func UploadFix(url string) string {
	return "on the host: apt-get install systemd-journal-remote; mkdir -p /etc/systemd/journal-upload.conf.d; " +
		"printf '[Upload]\\nURL=" + url + "/insert/journald\\n' > /etc/systemd/journal-upload.conf.d/bringup.conf; " +
		"systemctl enable --now systemd-journal-upload"
}
