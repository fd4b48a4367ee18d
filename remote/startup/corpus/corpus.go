// Package corpus reads bringup's corpus of real startup logs
// (remote/startup/testdata/corpus, format in FORMAT.md there): logs of
// SGLang and vLLM startups copied from public bug reports, each with its
// source, version and what an expert reads in it. The phase engine's
// table test and the end-to-end test on real journald both judge the
// diagnosis against it.
package corpus

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Log is one corpus log and its expectation.
type Log struct {
	Name, Source, Engine, Version string
	// Expect is failed, served or running (ends mid-startup, no error).
	Expect   string
	Cause    string
	FailedIn string
	// Phases are the path phases the trail must hold, starting left out.
	Phases []string
	// Evidence is a substring of the root-cause line.
	Evidence string
	// Body is the log text as found.
	Body string
}

// Class is the log's class for tallies: its cause, or served / running.
func (l Log) Class() string {
	if l.Expect == "failed" {
		return l.Cause
	}
	return l.Expect
}

// Dir is the corpus directory in this source tree.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "corpus")
}

// ReadAll reads every log of dir, in name order.
func ReadAll(dir string) ([]Log, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("corpus: no logs in %s", dir)
	}
	var out []Log
	for _, f := range files {
		l, err := Read(f)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// Read reads one corpus log; a header that breaks FORMAT.md is an error
// naming file:line.
func Read(path string) (Log, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Log{}, err
	}
	l := Log{Name: strings.TrimSuffix(filepath.Base(path), ".log")}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 16<<20)
	n, off, body := 0, 0, false
	for sc.Scan() {
		n++
		line := sc.Text()
		off += len(line) + 1
		if line == "---" {
			l.Body, body = string(b[min(off, len(b)):]), true
			break
		}
		k, v, ok := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		if !ok {
			return l, fmt.Errorf("%s:%d: header line is not \"key: value\"", path, n)
		}
		switch k {
		case "source":
			l.Source = v
		case "engine":
			l.Engine = v
		case "version":
			l.Version = v
		case "expect":
			l.Expect = v
		case "cause":
			l.Cause = v
		case "failed-in":
			l.FailedIn = v
		case "phases":
			l.Phases = strings.Fields(v)
		case "evidence":
			l.Evidence = v
		case "hardware", "cut", "note":
		default:
			return l, fmt.Errorf("%s:%d: unknown header %q", path, n, k)
		}
	}
	switch {
	case !body:
		return l, fmt.Errorf("%s: no \"---\" line ends the header", path)
	case !strings.HasPrefix(l.Source, "https://github.com/"):
		return l, fmt.Errorf("%s: source %q is not a public GitHub URL", path, l.Source)
	case l.Version == "" || l.Engine == "":
		return l, fmt.Errorf("%s: engine and version are required", path)
	case l.Expect == "failed" && (l.Cause == "" || l.FailedIn == ""):
		return l, fmt.Errorf("%s: a failed log needs cause and failed-in", path)
	case l.Expect != "failed" && l.Expect != "served" && l.Expect != "running":
		return l, fmt.Errorf("%s: expect %q is not failed, served or running", path, l.Expect)
	}
	return l, nil
}
