package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/cmd/bringup/config"
)

// TestDiscoverHosts: a config that reads a log store and lists no hosts
// gets the store's (each with the defaults, its name its SSH
// destination), and says so; a store with none for the unit is an error
// naming the store, the unit and what to do; a config that lists hosts
// never asks the store.
func TestDiscoverHosts(t *testing.T) {
	var rows []string
	asked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked++
		if r.URL.Path != "/select/logsql/query" || !strings.Contains(r.FormValue("query"), `UNIT:="vllm.service"`) {
			http.Error(w, "unexpected "+r.URL.Path+" "+r.FormValue("query"), http.StatusBadRequest)
			return
		}
		for _, row := range rows {
			_, _ = w.Write([]byte(row + "\n"))
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	write := func(name, y string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	src := "source: {kind: victorialogs, url: \"" + srv.URL + "\"}\n"
	bare := write("bare.yaml", "defaults: {unit: vllm.service, engine: vllm}\n"+src)

	rows = []string{`{"_HOSTNAME":"gpu7"}`, `{"_HOSTNAME":"gpu2"}`, `{"_HOSTNAME":"-oProxyCommand=x"}`}
	var out, errOut syncBuffer
	ff := fleetFlags{Flags: config.Flags{Path: bare}}
	_, hosts, err := ff.load(t.Context(), testEnv(&out, &errOut), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hosts {
		names = append(names, h.Name)
		if h.SSH != h.Name || h.Unit != "vllm.service" || h.Engine != "vllm" {
			t.Errorf("discovered host %+v: want its name as ssh, the defaults' unit and engine", h)
		}
	}
	if !slices.Equal(names, []string{"gpu2", "gpu7"}) {
		t.Errorf("discovered %v, want gpu2 gpu7", names)
	}
	for _, want := range []string{"2 hosts from the log store (vllm.service in the last 24h0m0s): gpu2, gpu7", `left out: "-oProxyCommand=x"`} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}

	rows = nil
	ff = fleetFlags{Flags: config.Flags{Path: bare}}
	_, _, err = ff.load(t.Context(), testEnv(&out, &errOut), nil)
	if err == nil || !strings.Contains(err.Error(), "no hosts configured, and the log store at "+srv.URL+" has no entry of vllm.service") {
		t.Errorf("an empty store: %v", err)
	}

	n := asked
	listed := write("listed.yaml", "hosts: [gpu1]\n"+src)
	ff = fleetFlags{Flags: config.Flags{Path: listed}}
	if _, hosts, err := ff.load(t.Context(), testEnv(&out, &errOut), nil); err != nil || len(hosts) != 1 || asked != n {
		t.Errorf("a config with hosts: %v, %d hosts, store asked %d times", err, len(hosts), asked-n)
	}
}
