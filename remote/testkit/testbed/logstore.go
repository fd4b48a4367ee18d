package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The log store a testbed can start (Options.LogStore): VictoriaLogs, fed
// by each host's own systemd-journal-upload.
const (
	// VictoriaLogsVersion is the release the testbed runs. Apache-2.0.
	VictoriaLogsVersion = "v1.52.1"
	// VictoriaLogsModule is what `go install` builds it from.
	VictoriaLogsModule = "github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs"
	// EnvVictoriaLogs names a prebuilt victoria-logs binary to use instead
	// of the cached one.
	EnvVictoriaLogs = "BRINGUP_TESTBED_VICTORIALOGS"
	// storeStartTimeout bounds VictoriaLogs' start, to /health answering.
	storeStartTimeout = 30 * time.Second
)

// storeState is the log store of a run, recorded before it starts so that
// a teardown (this process's or a later sweep's) stops it and removes its
// data.
type storeState struct {
	Proc    proc   `json:"proc"`
	DataDir string `json:"data_dir"`
	Log     string `json:"log"`
	Port    int    `json:"port"`
	// URL is where the console reaches it (loopback).
	URL string `json:"url"`
}

// VictoriaLogsBinary is the cached victoria-logs binary under cacheDir
// (what .ci/deps builds): cacheDir/victorialogs-VERSION/victoria-logs.
func VictoriaLogsBinary(cacheDir string) string {
	return filepath.Join(cacheDir, "victorialogs-"+VictoriaLogsVersion, "victoria-logs")
}

// storeBinary finds victoria-logs: $BRINGUP_TESTBED_VICTORIALOGS, else the
// cached build, else it builds it there with go install from the module
// proxy (about a minute; once per cache).
func storeBinary(ctx context.Context, cacheDir string, logf func(string, ...any)) (string, error) {
	if p := os.Getenv(EnvVictoriaLogs); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("log store: $%s: %w", EnvVictoriaLogs, err)
		}
		return p, nil
	}
	bin := VictoriaLogsBinary(cacheDir)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	logf("testbed: building victoria-logs %s into %s", VictoriaLogsVersion, filepath.Dir(bin))
	cmd := exec.CommandContext(ctx, "go", "install", VictoriaLogsModule+"@"+VictoriaLogsVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(bin), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("log store: go install %s@%s: %w: %s", VictoriaLogsModule, VictoriaLogsVersion, err, tailBytes(out, 800))
	}
	return bin, nil
}

// tailBytes is the end of b, for error messages.
func tailBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// freePort picks a TCP port free on loopback. The store listens on that
// port on every address it serves (loopback and each link's machine end);
// those addresses are the run's own, so the port only has to be free on
// loopback, where other runs' stores listen too.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("log store: pick a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startStore starts VictoriaLogs for the run. It listens on loopback (for
// the console and tests) and on the machine's end of every host's link,
// and nowhere else: a host reaches the store at its own link's far end
// (Host.RootAddr), the one address it has a route to, so no route or
// forwarding is added. The hosts' networks must exist first.
func (tb *Testbed) startStore(ctx context.Context, bin, inv string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	tb.mu.Lock()
	st := &storeState{
		DataDir: filepath.Join(inv, "victorialogs-data"), Log: filepath.Join(inv, "victorialogs.log"),
		Port: port, URL: "http://127.0.0.1:" + strconv.Itoa(port),
	}
	args := []string{
		"-storageDataPath=" + st.DataDir,
		"-httpListenAddr=127.0.0.1:" + strconv.Itoa(port),
		// Keep journald's __CURSOR (and the other __ fields): an entry's
		// cursor is its exact identity, which the store source uses to
		// drop the overlap after a resume.
		"-journald.includeEntryMetadata",
		"-retentionPeriod=1d",
		"-loggerOutput=stderr",
	}
	for _, h := range tb.st.Hosts {
		args = append(args, "-httpListenAddr="+net.JoinHostPort(h.RootAddr, strconv.Itoa(port)))
	}
	tb.st.Store = st
	tb.mu.Unlock()
	if err := tb.save(); err != nil {
		return err
	}
	logFile, err := os.OpenFile(st.Log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("log store: %w", err)
	}
	defer logFile.Close() // the child has its own copy
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own session, like the hosts: with Detach it outlives this process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("log store: start %s: %w", bin, err)
	}
	p, err := procOf(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("log store: %w", err)
	}
	tb.mu.Lock()
	st.Proc = p
	tb.mu.Unlock()
	tb.reapers.Add(1)
	go func() {
		defer tb.reapers.Done()
		_ = cmd.Wait() // exit is seen through /proc; this only reaps
	}()
	if err := tb.save(); err != nil {
		return err
	}
	if err := waitHealthy(ctx, st.URL+"/health", p, st.Log); err != nil {
		return err
	}
	return writeStoreConfig(inv, st.URL)
}

// StoreConfigName is the inventory's config that follows the hosts
// through the log store: config.yaml plus its source: section.
const StoreConfigName = "config-store.yaml"

// writeStoreConfig writes StoreConfigName next to config.yaml.
func writeStoreConfig(inv, url string) error {
	b, err := os.ReadFile(filepath.Join(inv, configName))
	if err != nil {
		return fmt.Errorf("log store: %w", err)
	}
	b = append(b, []byte("# The hosts' journals through the run's VictoriaLogs (actions still over SSH).\nsource: {kind: victorialogs, url: \""+url+"\"}\n")...)
	if err := os.WriteFile(filepath.Join(inv, StoreConfigName), b, 0o644); err != nil {
		return fmt.Errorf("log store: %w", err)
	}
	return nil
}

// waitHealthy polls the store's /health until it answers 200.
func waitHealthy(ctx context.Context, url string, p proc, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, storeStartTimeout)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("log store: %w", err)
		}
		if resp, err := c.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !p.alive() {
			return fmt.Errorf("log store: victoria-logs exited: %s", tail(logPath, 5))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("log store: %s did not answer: %w (log: %s)", url, ctx.Err(), tail(logPath, 5))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stopStore stops a run's store and removes its data.
func stopStore(ctx context.Context, st *storeState) error {
	if st == nil {
		return nil
	}
	var errs []error
	if st.Proc.alive() {
		_ = st.Proc.signal(syscall.SIGTERM)
		wctx, cancel := context.WithTimeout(ctx, stopTimeout)
		err := st.Proc.waitGone(wctx)
		cancel()
		if err != nil {
			_ = st.Proc.signal(syscall.SIGKILL)
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := st.Proc.waitGone(wctx); err != nil {
				errs = append(errs, fmt.Errorf("log store: stop victoria-logs %d: %w", st.Proc.PID, err))
			}
			cancel()
		}
	}
	if st.DataDir != "" {
		if err := os.RemoveAll(st.DataDir); err != nil {
			errs = append(errs, fmt.Errorf("log store: %w", err))
		}
	}
	return errors.Join(errs...)
}

// storeLeftovers lists what of a run's store still exists.
func storeLeftovers(st *storeState) []string {
	if st == nil {
		return nil
	}
	var out []string
	if st.Proc.alive() {
		out = append(out, fmt.Sprintf("victoria-logs process %d", st.Proc.PID))
	}
	if _, err := os.Stat(st.DataDir); err == nil {
		out = append(out, "log store data "+st.DataDir)
	}
	return out
}

// uploadConf is a host's journal-upload.conf drop-in: its own link's far
// end, where the store listens. systemd-journal-upload posts to URL +
// "/upload", which is VictoriaLogs' /insert/journald/upload.
func uploadConf(rootAddr string, port int) string {
	return "# bringup testbed: this host's journal goes to the run's VictoriaLogs.\n[Upload]\nURL=http://" +
		net.JoinHostPort(rootAddr, strconv.Itoa(port)) + "/insert/journald\n"
}

// LogStoreURL is where the run's VictoriaLogs answers queries (loopback),
// or "" when the run has none (Options.LogStore off).
func (tb *Testbed) LogStoreURL() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.st.Store == nil {
		return ""
	}
	return tb.st.Store.URL
}

// LogStorePID is the run's victoria-logs process id (for measuring what
// the store costs beside the console), or 0 when the run has none.
func (tb *Testbed) LogStorePID() int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.st.Store == nil {
		return 0
	}
	return tb.st.Store.Proc.PID
}
