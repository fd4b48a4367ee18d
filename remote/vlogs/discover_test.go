package vlogs

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDiscover: the hosts are the distinct _HOSTNAMEs the store returns
// for the unit, sorted; a _HOSTNAME that is no host name (a host's own
// say, which would become an SSH destination) is refused and named,
// quoted.
func TestDiscover(t *testing.T) {
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/select/logsql/query" {
			http.NotFound(w, r)
			return
		}
		query = r.FormValue("query")
		// The rows of `uniq by (_HOSTNAME)`, as VictoriaLogs v1.52.1 writes
		// them (TestStoreVia reads the real store's).
		for _, h := range []string{"gpu2", "gpu10", "-oProxyCommand=touch /tmp/x", "gpu1", "evil\x1b]0;x\x07", "rack-3.gpu4", "gpu2"} {
			_, _ = w.Write([]byte(`{"_HOSTNAME":` + jsonString(h) + "}\n"))
		}
	}))
	defer srv.Close()
	src, err := New(Options{URL: srv.URL, Unit: "sglang"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := src.Discover(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"gpu1", "gpu10", "gpu2", "rack-3.gpu4"}; !slices.Equal(d.Hosts, want) {
		t.Errorf("hosts %q, want %q", d.Hosts, want)
	}
	if len(d.Refused) != 2 || !strings.Contains(d.Refused[0], "-oProxyCommand") || !strings.Contains(d.Refused[1], `\x1b`) {
		t.Errorf("refused %q", d.Refused)
	}
	for _, want := range []string{"_time:86400s", `(_SYSTEMD_UNIT:="sglang.service" OR UNIT:="sglang.service")`, "| uniq by (_HOSTNAME)"} {
		if !strings.Contains(query, want) {
			t.Errorf("query %q lacks %q", query, want)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestValidHostname(t *testing.T) {
	for h, want := range map[string]bool{
		"gpu1": true, "rack-3.gpu4.example": true, "GPU_7": true, "a": true,
		"": false, "-x": false, ".gpu": false, "gpu.": false, "a..b": false, "gpu 1": false,
		"gpu1;reboot": false, "gpü": false, strings.Repeat("a", 64): false, strings.Repeat("a.", 127) + "a": false,
	} {
		if got := validHostname(h); got != want {
			t.Errorf("validHostname(%q) = %v, want %v", h, got, want)
		}
	}
}

// fakeTunnel dials the test server for any address and counts holds, to
// show the source holds its tunnel exactly while it talks to the store.
type fakeTunnel struct {
	mu           sync.Mutex
	addr         string
	held, dialed int
	dialIdle     int // dials while not held
}

func (f *fakeTunnel) Hold() func() {
	f.mu.Lock()
	f.held++
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.held--
			f.mu.Unlock()
		})
	}
}

func (f *fakeTunnel) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	f.mu.Lock()
	f.dialed++
	if f.held == 0 {
		f.dialIdle++
	}
	f.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, network, f.addr)
}

// TestViaCarriesRequests: with Options.Via, the store's URL is as the
// tunnel's far end sees it (here a name nothing here resolves), every
// connection is the tunnel's, opened while the source holds it, and the
// hold ends with the request.
func TestViaCarriesRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"_HOSTNAME":"gpu1"}` + "\n"))
	}))
	defer srv.Close()
	tun := &fakeTunnel{addr: strings.TrimPrefix(srv.URL, "http://")}
	src, err := New(Options{URL: "http://logs.behind-bastion.invalid:9428", Unit: "sglang", Via: tun})
	if err != nil {
		t.Fatal(err)
	}
	d, err := src.Discover(t.Context(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Hosts, []string{"gpu1"}) {
		t.Errorf("hosts %v", d.Hosts)
	}
	if tun.dialed == 0 || tun.dialIdle > 0 || tun.held != 0 {
		t.Errorf("tunnel: %d dials, %d while not held, %d holds left", tun.dialed, tun.dialIdle, tun.held)
	}
}
