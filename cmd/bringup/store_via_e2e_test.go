package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// storeRelay is a TCP relay run on the bastion: it listens on the
// bastion's own loopback and passes each connection to the store, so the
// store's URL as the bastion sees it (http://127.0.0.1:PORT) answers
// there and nowhere else.
const storeRelay = `import socket, sys, threading
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[1])))
ls.listen(64)
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass
while True:
    c, _ = ls.accept()
    try:
        u = socket.create_connection((sys.argv[2], int(sys.argv[3])))
    except OSError:
        c.close()
        continue
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
`

// TestStoreVia follows two test hosts through VictoriaLogs reached only
// through a third, the bastion (source.via): the store's URL is the
// bastion's own loopback, where a relay passes connections on to the
// testbed's store, so from this machine the URL answers nothing and every
// request must go through the SSH connection to the bastion. watch sees
// both hosts serve; the bastion is the only host with an SSH connection
// while it runs, and none is left after. doctor checks the store through
// the bastion too.
//
// What the testbed cannot do: the store itself still listens on this
// machine's loopback (the testbed starts it there); the test points the
// console at an address only the bastion serves instead.
func TestStoreVia(t *testing.T) {
	tb := testbed.StartWith(t, testbed.Options{Hosts: 3, LogStore: true, Host: func(int) testbed.HostOptions {
		return testbed.HostOptions{KernelMode: "on"}
	}})
	w := &actWorld{tb: tb}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	bastion := tb.Hosts()[0]
	su, err := url.Parse(tb.LogStoreURL())
	if err != nil {
		t.Fatal(err)
	}
	// A port free on this machine's loopback, so that the URL below is
	// refused here.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relayPort := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	w.sh(t, ctx, bastion.Name, "cat > /run/store-relay.py <<'EOF'\n"+storeRelay+"EOF\n"+
		"systemd-run --quiet --unit=store-relay python3 /run/store-relay.py "+strconv.Itoa(relayPort)+" "+bastion.RootAddr+" "+su.Port())
	viaURL := "http://127.0.0.1:" + strconv.Itoa(relayPort)
	// The relay answers on the bastion...
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := tb.Run(ctx, bastion.Name, "python3 -c \"import urllib.request; print(urllib.request.urlopen('"+viaURL+"/health').status)\"")
		if err == nil && strings.TrimSpace(out) == "200" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay on %s does not reach the store: %v %s", bastion.Name, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// ...and nothing answers the URL from here.
	if resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(viaURL + "/health"); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("%s answers on this machine (%s): the test would not show the tunnel", viaURL, resp.Status)
	}
	base, err := os.ReadFile(filepath.Join(tb.Inventory(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "via.yaml")
	src := "source: {kind: victorialogs, url: \"" + viaURL + "\", via: " + bastion.Name + "}\n"
	if err := os.WriteFile(cfg, append(base, src...), 0o600); err != nil {
		t.Fatal(err)
	}

	followed := []string{tb.Hosts()[1].Name, tb.Hosts()[2].Name}
	sessions := func() map[string]int {
		t.Helper()
		s, err := tb.SSHSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var out, errOut syncBuffer
	codeCh := make(chan int, 1)
	go func() {
		codeCh <- run(ctx, testEnv(&out, &errOut), append([]string{"watch", "--json", "--timeout", "2m", "--config", cfg}, followed...))
	}()
	time.Sleep(2 * time.Second)
	for _, h := range followed {
		w.sh(t, ctx, h, "systemctl start sglang")
	}
	time.Sleep(3 * time.Second) // the test's own sessions above are closed
	during := sessions()
	code := <-codeCh
	if code != exitServing {
		t.Fatalf("watch through %s: exit %d\n%s%s", bastion.Name, code, out.String(), errOut.String())
	}
	story := readWatch(t, out.String())
	for _, h := range followed {
		if !slices.Contains(story.phases[h], "serving") || !slices.Contains(story.phases[h], "graph-capture") {
			t.Errorf("%s phases through the tunnel: %v", h, story.phases[h])
		}
	}
	if during[bastion.Name] != 1 || during[followed[0]] != 0 || during[followed[1]] != 0 {
		t.Errorf("SSH connections while watching through %s: %v, want the bastion's one only", bastion.Name, during)
	}
	time.Sleep(time.Second)
	if s := sessions(); len(s) > 0 {
		t.Errorf("SSH connections after watch: %v", s)
	}

	code, dout, derr := w.bringup(ctx, append([]string{"doctor", "--json", "--config", cfg}, followed...)...)
	status := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(dout), "\n") {
		var c struct{ Kind, Host, Check, Status string }
		if err := json.Unmarshal([]byte(l), &c); err == nil && c.Kind == "check" {
			status[c.Host+" "+c.Check] = c.Status
		}
	}
	for _, h := range followed {
		for _, c := range []string{"log store", "uploads"} {
			if status[h+" "+c] != "ok" {
				t.Errorf("doctor through %s: %s %s is %q (exit %d)\n%s%s", bastion.Name, h, c, status[h+" "+c], code, dout, derr)
			}
		}
	}

	// A config that lists no hosts: they come from the store, the
	// distinct _HOSTNAMEs with the unit's entries — the two that ran it,
	// not the bastion, whose unit never started. status reads them
	// through the bastion too.
	bare := filepath.Join(t.TempDir(), "discover.yaml")
	y := "ssh_config: " + tb.SSHConfig() + "\ndefaults: {unit: " + testbed.UnitName + ", engine: sglang}\n" + src
	if err := os.WriteFile(bare, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	code, sout, serr := w.bringup(ctx, "status", "--json", "--config", bare)
	var got []string
	for l := range strings.Lines(strings.TrimSpace(sout)) {
		var row struct{ Kind, Host, Phase string }
		if err := json.Unmarshal([]byte(l), &row); err == nil && row.Kind == "status" {
			got = append(got, row.Host)
			if row.Phase != "serving" {
				t.Errorf("discovered %s: phase %s, want serving", row.Host, row.Phase)
			}
		}
	}
	if code != exitServing || !slices.Equal(got, followed) || !strings.Contains(serr, "2 hosts from the log store") {
		t.Errorf("status with no hosts listed: exit %d, hosts %v, want %v\n%s%s", code, got, followed, sout, serr)
	}
}
