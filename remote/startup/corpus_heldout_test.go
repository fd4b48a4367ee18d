package startup_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/remote/startup/corpus"
)

// heldOutFile lists the sha256 of every source of the held-out evaluation
// set: logs the rules are measured on and never tuned on. Only hashes are
// kept, so the list does not say where the held-out logs are.
const heldOutFile = "testdata/heldout-sources.sha256"

// normaliseSource is the form a source URL is hashed in: lower case,
// without a fragment or a query, without a trailing slash.
func normaliseSource(u string) string {
	u = strings.ToLower(strings.TrimSpace(u))
	if i := strings.IndexAny(u, "#?"); i >= 0 {
		u = u[:i]
	}
	return strings.TrimRight(u, "/")
}

func sourceHash(u string) string {
	sum := sha256.Sum256([]byte(normaliseSource(u)))
	return hex.EncodeToString(sum[:])
}

func readHeldOut(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(heldOutFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if b, err := hex.DecodeString(line); err != nil || len(b) != sha256.Size {
			t.Fatalf("%s:%d: %q is not a sha256 in hex", heldOutFile, n, line)
		}
		out[line] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", heldOutFile, err)
	}
	return out
}

func TestNormaliseSource(t *testing.T) {
	const want = "https://github.com/sgl-project/sglang/issues/4205"
	for _, in := range []string{
		"https://github.com/sgl-project/sglang/issues/4205",
		"https://github.com/SGL-Project/SGLang/issues/4205/",
		"https://github.com/sgl-project/sglang/issues/4205#issuecomment-2700000000",
		"https://github.com/sgl-project/sglang/issues/4205?utm=x#top",
		" https://github.com/sgl-project/sglang/issues/4205// ",
	} {
		if got := normaliseSource(in); got != want {
			t.Errorf("normaliseSource(%q) = %q, want %q", in, got, want)
		}
	}
	// sha256 of the normalised text, nothing appended.
	if got, want := sourceHash("https://example.com/A/"), "2dce0a4c50441bfccfa9caf4b58c3cba6e06c420505dd829f0436de1aa44baac"; got != want {
		t.Errorf("sourceHash = %s, want %s", got, want)
	}
}

// TestCorpusHeldOutSources: no log of the corpus, nor of the batch waiting
// in corpus-pending, comes from a held-out source. A log from one would
// make the held-out figure a figure on logs the rules were tuned on.
func TestCorpusHeldOutSources(t *testing.T) {
	held := readHeldOut(t)
	if len(held) < 50 {
		t.Fatalf("%s holds %d hashes: the list was cut", heldOutFile, len(held))
	}
	logs := readCorpus(t)
	logs = append(logs, readPending(t)...)
	for _, c := range logs {
		if held[sourceHash(c.Source)] {
			t.Errorf("%s: its source %s is a held-out source; remove the log", c.Name, c.Source)
		}
	}
	t.Logf("%d logs checked against %d held-out sources", len(logs), len(held))
}

// readPending reads the pending batch (none is no error).
func readPending(t testing.TB) []corpusLog {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(pendingDir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		return nil
	}
	logs, err := corpus.ReadAll(pendingDir)
	if err != nil {
		t.Fatal(err)
	}
	return logs
}
