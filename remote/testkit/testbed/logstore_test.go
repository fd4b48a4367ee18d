package testbed

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestUploadConf(t *testing.T) {
	got := uploadConf("10.213.0.1", 9428)
	if !strings.Contains(got, "[Upload]\nURL=http://10.213.0.1:9428/insert/journald\n") {
		t.Errorf("journal-upload.conf:\n%s", got)
	}
}

// TestLogStore boots two hosts with the log store: each host's
// systemd-journal-upload delivers its journal, and sglang.service's lines
// arrive under the host's own _HOSTNAME; the store listens on loopback and
// the links' machine ends only; Down stops it and removes its data.
func TestLogStore(t *testing.T) {
	tb := StartWith(t, Options{Hosts: 2, LogStore: true})
	base := tb.LogStoreURL()
	if base == "" {
		t.Fatal("no log store URL")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Where it listens: loopback and each host's link, nothing wider.
	tb.mu.Lock()
	st := *tb.st.Store
	tb.mu.Unlock()
	want := map[string]bool{"127.0.0.1:" + port: true}
	for _, h := range tb.Hosts() {
		want[net.JoinHostPort(h.RootAddr, port)] = true
	}
	got := listening(t, st.Proc.PID)
	for a := range want {
		if !got[a] {
			t.Errorf("not listening on %s (listens on %v)", a, got)
		}
	}
	for a := range got {
		if !want[a] {
			t.Errorf("listens on %s too", a)
		}
	}

	for _, h := range tb.Hosts() {
		if out, err := tb.Run(ctx, h.Name, "systemctl is-active systemd-journal-upload && systemctl start sglang.service"); err != nil {
			t.Fatalf("%s: %v: %s", h.Name, err, out)
		}
	}
	// Each host's server reaches serving; its ready line must be in the
	// store under its own _HOSTNAME.
	for _, h := range tb.Hosts() {
		q := `_SYSTEMD_UNIT:="sglang.service" _HOSTNAME:=` + strconv.Quote(h.Name) + ` "fired up and ready to roll"`
		var rows []map[string]string
		for ctx.Err() == nil {
			if rows = query(t, ctx, base, q); len(rows) > 0 {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if len(rows) != 1 {
			t.Fatalf("%s: %d ready lines in the store, want 1", h.Name, len(rows))
		}
		r := rows[0]
		if r["_HOSTNAME"] != h.Name || r["_SYSTEMD_UNIT"] != "sglang.service" || r["_SYSTEMD_INVOCATION_ID"] == "" || r["__CURSOR"] == "" {
			t.Errorf("%s: row %v: want _HOSTNAME, _SYSTEMD_UNIT, _SYSTEMD_INVOCATION_ID and __CURSOR kept", h.Name, r)
		}
		pid1 := query(t, ctx, base, `UNIT:="sglang.service" _HOSTNAME:=`+strconv.Quote(h.Name))
		if len(pid1) == 0 || pid1[0]["MESSAGE_ID"] == "" {
			t.Errorf("%s: PID 1's messages about the unit: %v", h.Name, pid1)
		}
	}

	dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer dcancel()
	if err := tb.Down(dctx); err != nil {
		t.Fatal(err)
	}
	if st.Proc.alive() {
		t.Errorf("victoria-logs %d still runs after Down", st.Proc.PID)
	}
	if _, err := os.Stat(st.DataDir); err == nil {
		t.Errorf("data dir %s left after Down", st.DataDir)
	}
}

// query runs a LogsQL query and returns its rows.
func query(t *testing.T, ctx context.Context, base, q string) []map[string]string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/select/logsql/query", strings.NewReader(url.Values{"query": {q}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("query %s: %s: %s", q, resp.Status, b)
	}
	var rows []map[string]string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("row %s: %v", l, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// listening lists the TCP addresses process pid listens on, from
// /proc/net/tcp and the process's socket inodes.
func listening(t *testing.T, pid int) map[string]bool {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
			continue
		}
		hp := strings.Split(f[1], ":")
		ip, _ := strconv.ParseUint(hp[0], 16, 32)
		port, _ := strconv.ParseUint(hp[1], 16, 16)
		a := net.IPv4(byte(ip), byte(ip>>8), byte(ip>>16), byte(ip>>24)) // little-endian
		out[net.JoinHostPort(a.String(), strconv.FormatUint(port, 10))] = true
	}
	return out
}

// TestDepsBuildsThisVictoriaLogs keeps .ci/deps building the version the
// testbed looks for.
func TestDepsBuildsThisVictoriaLogs(t *testing.T) {
	b, err := os.ReadFile("../../../.ci/deps")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nvl_version="+VictoriaLogsVersion+"\n") || !strings.Contains(string(b), VictoriaLogsModule+"@$vl_version") {
		t.Errorf(".ci/deps does not build %s@%s", VictoriaLogsModule, VictoriaLogsVersion)
	}
	if got := VictoriaLogsBinary("/c"); got != "/c/victorialogs-"+VictoriaLogsVersion+"/victoria-logs" {
		t.Errorf("binary path %s", got)
	}
}
