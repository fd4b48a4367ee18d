package journal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/testkit/testbed"
)

// captureEnv, set to 1 with BRINGUP_E2E=1, makes TestE2ECaptureExport
// rewrite testdata/export from a test host.
const captureEnv = "BRINGUP_CAPTURE"

// nativeLog sends journald native-protocol entries (binary-safe, so a
// MESSAGE can hold a newline, repeat, or be longer than any stdout line)
// from inside a unit, as sd_journal_sendv does.
const nativeLog = `import socket, struct, sys
def field(name, value):
    if b"\n" in value:
        return name + b"\n" + struct.pack("<Q", len(value)) + value + b"\n"
    return name + b"=" + value + b"\n"
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
s.connect("/run/systemd/journal/socket")
def send(*fields):
    s.send(b"".join(field(n, v) for n, v in fields))
send((b"MESSAGE", b"native two\nlines"), (b"PRIORITY", b"3"))
send((b"MESSAGE", b"first value"), (b"MESSAGE", b"second value"), (b"UNIT", b"a.service"), (b"UNIT", b"b.service"))
send((b"MESSAGE", b"\t tab and \xc3\xa9 and \xe2\x82\xac"), (b"EXIT_STATUS", b"7"))
send((b"MESSAGE", "é".encode() * 60000))
send((b"MESSAGE", b"native last"))
`

// TestE2ECaptureExport records journalctl's export and JSON output of the
// same entries on a test host: a service's startup (infersim as sglang,
// with its progress-bar lines), escape sequences and invalid UTF-8, a
// failing unit, a stdout line over LineMax, native entries (a MESSAGE
// with a newline, a repeated one, one of 120 000 bytes), and journald's
// suppression notice. The files under testdata/export are what it wrote:
// real output, kept as printed, that the differential test and the fuzz
// seeds use. It runs only when asked (BRINGUP_CAPTURE=1), since it
// rewrites them.
func TestE2ECaptureExport(t *testing.T) {
	if os.Getenv(captureEnv) != "1" {
		t.Skipf("rewrites testdata/export: set %s=1 with BRINGUP_E2E=1", captureEnv)
	}
	tb := testbed.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := func(cmd string) string { return run(t, ctx, tb, "gpu1", cmd) }

	sh("systemctl start sglang")
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(sh("journalctl -q -u sglang -o cat --no-pager"), "The server is fired up and ready to roll") {
		if time.Now().After(deadline) {
			t.Fatal("sglang not ready within 2 minutes")
		}
		time.Sleep(time.Second)
	}
	sh("systemctl stop sglang")
	sh(`systemd-run --unit=esc.service --wait -q sh -c 'printf "\033]52;c;SGVsbG8=\007\033]0;pwned\007\033[2Jafter the escapes\n"; printf "bad utf-8 \377\376 end\n"; printf "cr\rline\n"; printf "tab\there\n"'`)
	_, _ = tb.Run(ctx, "gpu1", `systemd-run --unit=fail.service --wait -q sh -c 'echo about to fail; exit 3'`)
	sh(`systemd-run --unit=long.service --wait -q python3 -c 'print("x" * 60000); print("after the long line")'`)
	sh("cat > /usr/local/bin/nativelog.py <<'EOF'\n" + nativeLog + "EOF\n")
	sh(`systemd-run --unit=native.service --wait -q python3 /usr/local/bin/nativelog.py`)

	// journald's rate limit, briefly, for its suppression notice.
	const dropin = "/etc/systemd/journald.conf.d/zz-capture.conf"
	sh("printf '[Journal]\\nRateLimitIntervalSec=2s\\nRateLimitBurst=100\\n' > " + dropin + " && systemctl restart systemd-journald")
	sh("cat > /usr/local/bin/flood.py <<'EOF'\n" + flood + "EOF\n")
	sh("systemd-run --unit=flood.service --wait -q python3 /usr/local/bin/flood.py 1000")
	sh("rm -f " + dropin + " && systemctl restart systemd-journald")

	dir := filepath.Join("testdata", "export")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"sglang", "esc", "fail", "long", "native", "flood"} {
		for _, format := range []string{"export", "json"} {
			out := sh("journalctl -q -u " + u + " -o " + format + " --all --no-pager --output-fields=" + OutputFields)
			if out == "" {
				t.Fatalf("no %s output for %s", format, u)
			}
			if err := os.WriteFile(filepath.Join(dir, u+"."+format), []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("systemd: %s", strings.SplitN(sh("journalctl --version"), "\n", 2)[0])
}
