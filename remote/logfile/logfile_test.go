package logfile

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
	"github.com/bringup-dev/bringup/remote/startup"
)

// TestReadJournalPastes reads journalctl short lines as pasted into real
// tickets (vllm-project/vllm#2047's Proxmox host, 1CatAI/1Cat-vLLM#237's
// Russian month names): times from the prefix, PID 1's lines kept as
// systemd's, messages without the prefix.
func TestReadJournalPastes(t *testing.T) {
	text := "Aug 19 17:59:52 vllm systemd[1]: Started vllm.service - vLLM OpenAI-Compatible Inference Server.\n" +
		"Aug 19 18:00:10 vllm vllm[7048]: (APIServer pid=7048) INFO 08-19 18:00:10 [api_utils.py:345]\n" +
		"-- Boot 8d3f... --\n" +
		"авг 18 14:15:04 llm python3[28059]: (EngineCore pid=28341) INFO 08-18 14:15:04 [core.py:100] x\n"
	lg, err := Read(strings.NewReader(text), "paste", Options{Year: 2025})
	if err != nil {
		t.Fatal(err)
	}
	if lg.Format != FormatJournal || !lg.Timed || len(lg.Events) != 3 {
		t.Fatalf("format %s timed %v, %d events", lg.Format, lg.Timed, len(lg.Events))
	}
	first, second, third := lg.Events[0], lg.Events[1], lg.Events[2]
	if first.Journal.PID != 1 || first.Journal.Message != "Started vllm.service - vLLM OpenAI-Compatible Inference Server." ||
		!first.Time.Equal(time.Date(2025, 8, 19, 17, 59, 52, 0, time.UTC)) {
		t.Errorf("first: %+v %+v", first, first.Journal)
	}
	if second.Journal.PID != 7048 || !strings.HasPrefix(second.Journal.Message, "(APIServer pid=7048)") {
		t.Errorf("second: %+v", second.Journal)
	}
	// Russian "авг": the month is not known, so the line before's is kept;
	// times never go backwards.
	if third.Time.Before(second.Time) {
		t.Errorf("third %v before second %v", third.Time, second.Time)
	}
}

func TestReadEngineTimes(t *testing.T) {
	text := "no time yet\n" +
		"[2025-01-24 09:39:20 TP0] Load weight begin. avail mem=78.50 GB\n" +
		"[09:39:31 TP0] Capture cuda graph begin.\n" +
		"(EngineCore_DP0 pid=441) INFO 08-05 09:09:28 [gpu_model_runner.py:1953] Starting to load model\n" +
		"bare line\n"
	lg, err := Read(strings.NewReader(text), "engine.log", Options{Year: 2025})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Time{
		time.Date(2025, 1, 24, 9, 39, 20, 0, time.UTC), // the first timed line's time
		time.Date(2025, 1, 24, 9, 39, 20, 0, time.UTC),
		time.Date(2025, 1, 24, 9, 39, 31, 0, time.UTC), // time only: the date before
		time.Date(2025, 8, 5, 9, 9, 28, 0, time.UTC),   // vLLM: no year, the option's
		time.Date(2025, 8, 5, 9, 9, 28, 0, time.UTC),   // bare: the line before's
	}
	if lg.Format != FormatPlain || len(lg.Events) != len(want) {
		t.Fatalf("format %s, %d events", lg.Format, len(lg.Events))
	}
	for i, ev := range lg.Events {
		if !ev.Time.Equal(want[i]) {
			t.Errorf("line %d: %v, want %v", i+1, ev.Time, want[i])
		}
	}
}

// TestJSONTimesNeverGoBack: journald's own clock steps back (an NTP
// correction, journals merged); a `-o json` log read so once gave the
// phase after the step a negative length (`weights -1m0s`). Its times go
// through the same rule as the plain path's: never backwards, and an
// entry without one takes the line before's.
func TestJSONTimesNeverGoBack(t *testing.T) {
	line := func(sec int, msg string) string {
		ts := ""
		if sec >= 0 {
			ts = fmt.Sprintf(`,"__REALTIME_TIMESTAMP":"%d"`, (1764000000+int64(sec))*1000000)
		}
		return fmt.Sprintf(`{"MESSAGE":%q,"_PID":"900","PRIORITY":"6"%s}`, msg, ts) + "\n"
	}
	text := line(0, "[2025-11-24 16:00:00] server_args=ServerArgs(model_path='x', tp_size=1)") +
		line(70, "[2025-11-24 16:01:10 TP0] Load weight begin. avail mem=78.50 GB") +
		line(10, "[2025-11-24 16:00:10 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.00 GB, mem usage=18.50 GB.") +
		line(-1, "no timestamp here") +
		line(12, "[2025-11-24 16:00:12 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=59.00 GB") +
		line(90, "[2025-11-24 16:01:30 TP0] Capture cuda graph end. Time elapsed: 8.00 s. mem usage=1.00 GB. avail mem=58.00 GB.") +
		line(95, "[2025-11-24 16:01:35] The server is fired up and ready to roll!")
	lg, err := Read(strings.NewReader(text), "back.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if lg.Format != FormatJSON || len(lg.Events) != 7 {
		t.Fatalf("format %s, %d events", lg.Format, len(lg.Events))
	}
	for i := 1; i < len(lg.Events); i++ {
		if lg.Events[i].Time.Before(lg.Events[i-1].Time) {
			t.Errorf("line %d at %v, before line %d at %v", i+1, lg.Events[i].Time, i, lg.Events[i-1].Time)
		}
	}
	x := startup.Explain(lg.Events, startup.Options{Engine: "sglang"})
	if len(x.Startup.Spans) < 3 {
		t.Fatalf("spans %+v", x.Startup.Spans)
	}
	for _, sp := range x.Startup.Spans {
		if d := sp.Duration(lg.Events[len(lg.Events)-1].Time); d < 0 {
			t.Errorf("phase %s lasted %s", sp.Phase, d)
		}
	}
}

// TestBinaryIsNotALog: random bytes (head -c 1000000 /dev/urandom) or a
// compressed log once read as 3 842 lines of text and came out as the
// verdict UNDECIDED; they are refused as not a log, saying what a
// compressed one is. A log with what real logs hold — colour escapes,
// Latin-1 bytes, carriage returns, a NUL-filled block a crash left — is
// still a log.
func TestBinaryIsNotALog(t *testing.T) {
	random := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(27, 1))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	for i := range 200 {
		fmt.Fprintf(zw, "[2025-01-24 09:39:%02d TP0] Load weight begin. avail mem=78.50 GB\n", i%60)
	}
	zw.Close()
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"random", random, "random: not a log: "},
		{"small", random[:300], "small: not a log: "},
		{"log.gz", gz.Bytes(), "log.gz: not a log: "},
	} {
		_, err := Read(bytes.NewReader(tt.data), tt.name, Options{})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one starting %q", tt.name, err, tt.want)
		}
		if gzipped := tt.name == "log.gz"; err != nil && gzipped != strings.HasSuffix(err.Error(), "(gzip-compressed: zcat it into bringup explain -)") {
			t.Errorf("%s: error %v: the gzip hint is wrong", tt.name, err)
		}
	}
	realLog := "\x1b[32mINFO\x1b[0m [2025-01-24 09:39:20 TP0] Load weight begin. avail mem=78.50 GB\r\n" +
		"[2025-01-24 09:39:21 TP0] mod\xe8le charg\xe9 (Latin-1)\n" +
		strings.Repeat("\x00", 4096) + "\n" +
		"[2025-01-24 09:39:22 TP0] Capture cuda graph begin.\n"
	lg, err := Read(strings.NewReader(realLog), "real.log", Options{})
	if err != nil || len(lg.Events) != 4 {
		t.Fatalf("a log with escapes, Latin-1 and a NUL block: %d events, %v", len(lg.Events), err)
	}
}

func TestReadErrorsNameTheLine(t *testing.T) {
	text := `{"MESSAGE":"ok","__REALTIME_TIMESTAMP":"1700000000000000"}` + "\n" + `{"MESSAGE": [1, 2,` + "\n"
	_, err := Read(strings.NewReader(text), "broken.json", Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "broken.json:2: journal JSON:") {
		t.Fatalf("error %v, want one naming broken.json:2", err)
	}
}

func TestReadSanitises(t *testing.T) {
	lg, err := Read(strings.NewReader("\x1b]0;pwned\x07[2025-01-24 09:39:20 TP0] x\x1b[2J\n"), "evil", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := lg.Events[0].Journal.Message; strings.ContainsAny(m, "\x1b\x07") {
		t.Errorf("message %q holds control characters", m)
	}
}

func FuzzRead(f *testing.F) {
	f.Add("Aug 19 17:59:52 vllm systemd[1]: Started x.\n[2025-01-24 09:39:20 TP0] y\n")
	f.Add(`{"MESSAGE":"ok","__REALTIME_TIMESTAMP":"1700000000000000"}` + "\n")
	f.Fuzz(func(t *testing.T, s string) {
		lg, err := Read(strings.NewReader(s), "fuzz", Options{Year: 2025})
		if err != nil {
			return
		}
		for i := 1; i < len(lg.Events); i++ {
			if lg.Events[i].Time.Before(lg.Events[i-1].Time) {
				t.Fatalf("time went backwards at %d", i)
			}
		}
	})
}

// TestScanLines: each event's line number, and whether the line carried
// its time or took the one before's (a tqdm bar, a paste's leading lines).
func TestScanLines(t *testing.T) {
	text := "leading line\n" +
		"[2026-03-01 03:09:37 TP0] Memory pool end. avail mem=18.61 GB\n" +
		"\n" +
		"Capturing batches (bs=160 avail_mem=18.2 GB):   0%|          | 0/35\n" +
		"[2026-03-01 03:09:45 TP0] Capture cuda graph begin.\n"
	type got struct {
		n   int
		own bool
		at  string
	}
	var lines []got
	_, err := ScanLines(strings.NewReader(text), "x", Options{Host: "h"}, func(ev event.Event, l Line) error {
		lines = append(lines, got{l.N, l.OwnTime, ev.Time.Format("15:04:05")})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []got{{1, false, "03:09:37"}, {2, true, "03:09:37"}, {3, false, "03:09:37"}, {4, false, "03:09:37"}, {5, true, "03:09:45"}}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("lines %v, want %v", lines, want)
	}
}
