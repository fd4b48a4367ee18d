package journal

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bringup-dev/bringup/remote/event"
)

// captures are the pairs under testdata/export: the same entries of one
// unit as journalctl printed them with -o export and with -o json (systemd
// 252, Debian 12, on a test host; TestE2ECaptureExport wrote them).
var captures = []string{"sglang", "esc", "fail", "long", "native", "flood"}

func readCapture(t testing.TB, name, format string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "export", name+"."+format))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeAll reads every entry of a stream through the decoder Follow
// would pick for it, with the message limit maxMsg.
func decodeAll(t testing.TB, b []byte, maxMsg int) []Entry {
	t.Helper()
	next := entries(bytes.NewReader(b), maxMsg)
	var out []Entry
	for {
		e, err := next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("entry %d: %v", len(out)+1, err)
		}
		out = append(out, e)
	}
}

// TestExportMatchesJSON is the differential test: on real output, the
// export decoder gives exactly the Entry the JSON decoder gives for the
// same entry, at the default limit and at limits that cut messages
// (inside multi-byte runes too: the native capture has a 120 000-byte
// message of "é"). The one difference is by design: where the JSON line
// is too long for the JSON reader to hold (it keeps 4×MaxLine+64 KiB), the
// JSON path has only OversizeMessage while export still has the message's
// first MaxLine bytes.
func TestExportMatchesJSON(t *testing.T) {
	for _, name := range captures {
		exp, js := readCapture(t, name, "export"), readCapture(t, name, "json")
		if exp[0] == '{' || js[0] != '{' {
			t.Fatalf("%s: captures in the wrong format", name)
		}
		for _, limit := range []int{DefaultMaxLine, 4096, 101, 100, 7} {
			fromJSON, fromExport := decodeAll(t, js, limit), decodeAll(t, exp, limit)
			if len(fromJSON) != len(fromExport) || len(fromJSON) == 0 {
				t.Fatalf("%s at %d: %d entries from JSON, %d from export", name, limit, len(fromJSON), len(fromExport))
			}
			for i, j := range fromJSON {
				x := fromExport[i]
				if j.Message == OversizeMessage && j.Truncated {
					if !x.Truncated || len(x.Message) > limit || !utf8.ValidString(x.Message) || x.Cursor != j.Cursor || x.Unit != j.Unit ||
						x.PID != j.PID || !x.Realtime.Equal(j.Realtime) || x.InvocationID != j.InvocationID {
						t.Errorf("%s entry %d at %d: oversize in JSON %+v, export %+v", name, i+1, limit, j, x)
					}
					continue
				}
				if !reflect.DeepEqual(j, x) {
					t.Errorf("%s entry %d at %d:\njson   %#v\nexport %#v", name, i+1, limit, j, x)
				}
			}
		}
	}
}

// TestExportCaptures checks what the captures hold, decoded from export:
// the cases the decoder exists for, each on real output.
func TestExportCaptures(t *testing.T) {
	all := map[string][]Entry{}
	for _, name := range captures {
		all[name] = decodeAll(t, readCapture(t, name, "export"), DefaultMaxLine)
	}
	find := func(name string, ok func(Entry) bool) Entry {
		t.Helper()
		for _, e := range all[name] {
			if ok(e) {
				return e
			}
		}
		t.Fatalf("%s: no such entry", name)
		return Entry{}
	}
	for name, es := range all {
		for _, e := range es {
			if !validCursor(e.Cursor) || e.Realtime.Before(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || !validID(e.BootID) {
				t.Errorf("%s: entry without its cursor, time or boot: %+v", name, e)
			}
		}
	}
	started := find("sglang", func(e Entry) bool { return e.MessageID == midStarted })
	if started.Unit != "sglang.service" || started.PID != 1 || started.Fields["JOB_TYPE"] != "start" || !validID(started.InvocationID) {
		t.Errorf("Started line %+v", started)
	}
	if e := find("sglang", func(e Entry) bool { return strings.HasPrefix(e.Message, "\r") }); e.Unit != "sglang.service" || e.InvocationID != started.InvocationID {
		t.Errorf("progress bar %+v", e)
	}
	find("esc", func(e Entry) bool {
		return e.Message == "\x1b]52;c;SGVsbG8=\x07\x1b]0;pwned\x07\x1b[2Jafter the escapes"
	})
	find("esc", func(e Entry) bool { return e.Message == "bad utf-8 \xff\xfe end" })
	find("esc", func(e Entry) bool { return e.Message == "cr\rline" })
	find("esc", func(e Entry) bool { return e.Message == "tab\there" })
	exited := find("fail", func(e Entry) bool { return strings.Contains(e.Message, "Main process exited") })
	if exited.Fields["EXIT_CODE"] != "exited" || exited.Fields["EXIT_STATUS"] != "3" || exited.Unit != "fail.service" {
		t.Errorf("exit line %+v", exited)
	}
	if e := find("fail", func(e Entry) bool { return strings.Contains(e.Message, "Failed with result") }); e.Fields["UNIT_RESULT"] != "exit-code" {
		t.Errorf("result line %+v", e)
	}
	if e := find("long", func(e Entry) bool { return e.Fields["_LINE_BREAK"] == "line-max" }); len(e.Message) < 40000 || strings.Trim(e.Message, "x") != "" {
		t.Errorf("split line of %d bytes", len(e.Message))
	}
	find("native", func(e Entry) bool { return e.Message == "native two\nlines" && e.Priority == 3 })
	if e := find("native", func(e Entry) bool { return strings.HasPrefix(e.Message, "first value") }); e.Message != "first value\nsecond value" || e.Unit != "native.service" {
		t.Errorf("repeated MESSAGE and UNIT: %+v", e)
	}
	find("native", func(e Entry) bool { return e.Message == "\t tab and é and €" && e.Fields["EXIT_STATUS"] == "7" })
	find("native", func(e Entry) bool { return e.Message == strings.Repeat("é", DefaultMaxLine/2) && e.Truncated }) // of 120 000 bytes
	sup := find("flood", func(e Entry) bool { return e.MessageID == SuppressedID })
	if n, ok := sup.Suppressed(); !ok || n == 0 || sup.ObjectUnit != "flood.service" || sup.Unit != "systemd-journald.service" {
		t.Errorf("suppression notice %+v", sup)
	}
}

// exportField renders one field value as journalctl's output_export does:
// text when it is printable UTF-8 without a newline
// (utf8_is_printable_newline(…, false)), else binary with its length.
func exportField(b *bytes.Buffer, name, v string) {
	if printable(v) {
		fmt.Fprintf(b, "%s=%s\n", name, v)
		return
	}
	b.WriteString(name + "\n")
	_ = binary.Write(b, binary.LittleEndian, uint64(len(v)))
	b.WriteString(v + "\n")
}

// printable is systemd's utf8_is_printable_newline without newlines:
// valid UTF-8, no C0 control but tab, no DEL or C1 control.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < ' ' && r != '\t' || r >= 0x7f && r <= 0x9f {
			return false
		}
	}
	return true
}

// exportOf renders an entry that journalctl printed as a JSON line the
// way it prints it with -o export: the cursor, timestamps and boot id
// first, then the other fields (here in name order), a repeated field
// once per value. A line that is not an entry renders as an undecodable
// one.
func exportOf(line string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &m) != nil {
		return "not a field\n\n"
	}
	var b bytes.Buffer
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	head := []string{"__CURSOR", "__REALTIME_TIMESTAMP", "__MONOTONIC_TIMESTAMP", "_BOOT_ID"}
	slices.SortFunc(names, func(a, b string) int {
		ia, ib := slices.Index(head, a), slices.Index(head, b)
		if ia < 0 {
			ia = len(head)
		}
		if ib < 0 {
			ib = len(head)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	for _, k := range names {
		for _, v := range jsonValues(m[k]) {
			exportField(&b, k, v)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// jsonValues returns the values of a journalctl JSON field: a string, a
// byte array, or an array of those (nulls left out).
func jsonValues(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var bs []byte
	var nums []int
	if json.Unmarshal(raw, &nums) == nil {
		for _, n := range nums {
			bs = append(bs, byte(n))
		}
		return []string{string(bs)}
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) != nil {
		return nil
	}
	var out []string
	for _, v := range arr {
		out = append(out, jsonValues(v)...)
	}
	return out
}

// TestExportOfMatchesCaptures checks the test's own renderer against
// journalctl's: the entries it renders from the JSON captures decode to
// what the real export output decodes to.
func TestExportOfMatchesCaptures(t *testing.T) {
	for _, name := range captures {
		var rendered strings.Builder
		for line := range strings.Lines(string(readCapture(t, name, "json"))) {
			rendered.WriteString(exportOf(strings.TrimSuffix(line, "\n")))
		}
		want := decodeAll(t, readCapture(t, name, "export"), DefaultMaxLine)
		if got := decodeAll(t, []byte(rendered.String()), DefaultMaxLine); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: rendered from JSON decodes differently (%d entries, want %d)", name, len(got), len(want))
		}
	}
}

// TestExportDecodesLikeJSON runs DecodeLimit's table cases through export.
func TestExportDecodesLikeJSON(t *testing.T) {
	for _, line := range []string{
		sglangLine,
		`{"MESSAGE":"Started sglang.service - SGLang.","MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","UNIT":"sglang.service","INVOCATION_ID":"` + testInv + `","_PID":"1","PRIORITY":"6","JOB_TYPE":"start","JOB_RESULT":"done","_SYSTEMD_UNIT":"init.scope"}`,
		`{"MESSAGE":` + jsonBytes("\x1b]52;c;SGVsbG8=\x07\x1b[2Jafter") + `}`,
		`{"MESSAGE":[255,254,0,13,10]}`,
		`{"MESSAGE":["one",[116,119,111],"three"]}`,
		`{"MESSAGE":["",""]}`,
		`{"_SYSTEMD_UNIT":"a.service","UNIT":"b.service","MESSAGE":""}`,
		`{"UNIT":["a.service","b.service"],"MESSAGE":""}`,
		`{"UNIT":["a b","b.service"],"MESSAGE":""}`,
		`{"MESSAGE_ID":"\u001b]0;x\u0007","UNIT":"a b","__CURSOR":"s='x'","_BOOT_ID":"zz","MESSAGE":"m"}`,
		`{"MESSAGE_ID":"` + SuppressedID + `","MESSAGE":"Suppressed 17500 messages from flood.service","_SYSTEMD_UNIT":"systemd-journald.service","OBJECT_SYSTEMD_UNIT":"flood.service","N_DROPPED":"17500"}`,
		`{"PRIORITY":"","_PID":"-3","N_DROPPED":"+4"}`,
		`{"EXIT_STATUS":["1","2"],"_LINE_BREAK":[10]}`,
		`{"X":"s","MESSAGE":"m"}`,
	} {
		want, err := Decode([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		got := decodeAll(t, []byte(exportOf(line)), DefaultMaxLine)
		if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("%s:\nexport %#v\njson   %#v", line, got, want)
		}
	}
}

func TestExportTruncates(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	for _, v := range []string{long, long + "\n", strings.Repeat("é", 70000)} {
		var b bytes.Buffer
		exportField(&b, "MESSAGE", v)
		b.WriteString("\n")
		for _, size := range []int{128, 64 << 10} {
			es := readExport(t, b.Bytes(), 101, size)
			if len(es) != 1 || !es[0].Truncated || len(es[0].Message) != 100 || !utf8.ValidString(es[0].Message) {
				t.Errorf("%d-byte value through a %d-byte buffer: %+v", len(v), size, es)
			}
		}
	}
	// Repeated values share the limit: "ab\ncd" cut at 4.
	es := readExport(t, []byte("MESSAGE=ab\nMESSAGE=cd\nMESSAGE=ef\n\n"), 4, 128)
	if len(es) != 1 || es[0].Message != "ab\nc" || !es[0].Truncated {
		t.Errorf("joined and cut: %+v", es)
	}
	es = readExport(t, []byte("MESSAGE=abcd\n\n"), 4, 128)
	if len(es) != 1 || es[0].Message != "abcd" || es[0].Truncated {
		t.Errorf("at the limit: %+v", es)
	}
}

// readExport decodes every entry of b through a read buffer of size
// bytes, recording undecodable entries as an Entry with Message "ERR".
func readExport(t testing.TB, b []byte, maxMsg, size int) []Entry {
	t.Helper()
	r := newExportReader(bytes.NewReader(b), maxMsg, size)
	var out []Entry
	for {
		e, err := r.Next()
		var bad *EntryError
		switch {
		case errors.Is(err, io.EOF):
			return out
		case errors.As(err, &bad):
			out = append(out, Entry{Message: "ERR"})
		case errors.Is(err, io.ErrUnexpectedEOF):
			return append(out, Entry{Message: "CUT"})
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, e)
		}
	}
}

func TestExportFraming(t *testing.T) {
	entry := func(msg string) string {
		var b bytes.Buffer
		exportField(&b, "__CURSOR", testCursor)
		exportField(&b, "MESSAGE", msg)
		b.WriteString("\n")
		return b.String()
	}
	ok := entry("fine")
	binLen := func(n uint64) string {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], n)
		return string(b[:])
	}
	huge := strings.Repeat("y", 200<<10)
	for _, tt := range []struct {
		name, in string
		want     string // messages, "ERR" for an undecodable entry, "CUT" for a cut stream
	}{
		{"two entries", ok + entry("\x1b[31mred"), "fine,\x1b[31mred"},
		{"stray empty lines", "\n\n" + ok + "\n" + ok, "fine,fine"},
		{"cut in a text field", ok + "__CURSOR=s=1\nMESS", "fine,CUT"},
		{"cut in a binary length", ok + "MESSAGE\n\x03\x00", "fine,CUT"},
		{"cut in a binary value", ok + "MESSAGE\n" + binLen(10) + "abc", "fine,CUT"},
		{"cut before the empty line", ok + "MESSAGE=x\n", "fine,CUT"},
		{"binary length over journald's", "MESSAGE\n" + binLen(1<<40) + "x\n\n" + ok, "ERR,fine"},
		{"binary value without its newline", "MESSAGE\n" + binLen(1) + "xy\n\n" + ok, "ERR,fine"},
		{"bad field name", "message=x\n\n" + ok, "ERR,fine"},
		{"empty field name", "=x\n\n" + ok, "ERR,fine"},
		{"a number that is not", "_PID=x\nMESSAGE=m\n\n" + ok, "ERR,fine"},
		{"unknown binary field skipped", "X\n" + binLen(3) + "a\nb\nMESSAGE=m\n\n", "m"},
		{"long unknown text field skipped", "X=" + huge + "\nMESSAGE=m\n\n", "m"},
		{"long binary message", "MESSAGE\n" + binLen(uint64(len(huge))) + huge + "\n\n" + ok, huge[:64<<10] + ",fine"},
		{"long text message", "MESSAGE=" + huge + "\n\n" + ok, huge[:64<<10] + ",fine"},
		{"a binary value holding an empty line", "MESSAGE\n" + binLen(4) + "a\n\nb\n\n" + ok, "a\n\nb,fine"},
	} {
		for _, size := range []int{128, 64 << 10} {
			var got []string
			for _, e := range readExport(t, []byte(tt.in), DefaultMaxLine, size) {
				got = append(got, e.Message)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("%s (buffer %d): got %.80q, want %.80q", tt.name, size, strings.Join(got, ","), tt.want)
			}
		}
	}
}

func TestExportLongIdentifiers(t *testing.T) {
	// A field value over what the reader keeps fails its check, as the
	// whole value would: an identifier is dropped, a number is an error.
	long := strings.Repeat("a", fieldKeep+10)
	es := readExport(t, []byte("_SYSTEMD_UNIT="+long+"\nUNIT=u.service\nMESSAGE=m\n\n_PID="+strings.Repeat("1", fieldKeep+10)+"\n\n"), 100, 128)
	if len(es) != 2 || es[0].Unit != "u.service" || es[1].Message != "ERR" {
		t.Errorf("got %+v", es)
	}
}

func TestExportErrorNamesThePlace(t *testing.T) {
	r := NewExportReader(strings.NewReader("__CURSOR=x\nMESSAGE\n\xff\xff\xff\xff\xff\xff\xff\xff\n\n"), 0)
	_, err := r.Next()
	var bad *EntryError
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "field MESSAGE") || !strings.Contains(err.Error(), "at byte 11 of the entry") {
		t.Errorf("error %v", err)
	}
}

func FuzzDecodeExport(f *testing.F) {
	// Seeds: the corpus under testdata/fuzz/FuzzDecodeExport (entries cut
	// at entry boundaries from the captures, each with the entry after
	// it), the small captures whole, and framing cases.
	for _, name := range []string{"esc", "fail"} {
		b, err := os.ReadFile(filepath.Join("testdata", "export", name+".export"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("MESSAGE\n\x05\x00\x00\x00\x00\x00\x00\x00a\n\nb\n\n_PID=1\n\n"))
	f.Add([]byte("MESSAGE=a\nMESSAGE=b\nUNIT=a.service\nUNIT=b.service\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 64
		small, big := readExport(t, data, limit, 128), readExport(t, data, limit, 64<<10)
		if !reflect.DeepEqual(small, big) {
			t.Errorf("the read buffer's size changed what was decoded:\n128: %+v\n64k: %+v", small, big)
		}
		for _, e := range big {
			if len(e.Message) > limit {
				t.Errorf("message of %d bytes over the limit", len(e.Message))
			}
			if len(e.Message) < limit-utf8.UTFMax && e.Truncated {
				t.Errorf("message of %d bytes marked truncated", len(e.Message))
			}
			for _, id := range []string{e.MessageID, e.InvocationID, e.BootID} {
				if id != "" && !validID(id) {
					t.Errorf("invalid id %q kept", id)
				}
			}
			for _, u := range []string{e.Unit, e.ObjectUnit} {
				if u != "" && !validUnit(u) {
					t.Errorf("invalid unit %q kept", u)
				}
			}
			if e.Cursor != "" && !validCursor(e.Cursor) {
				t.Errorf("invalid cursor %q kept", e.Cursor)
			}
		}
	})
}

// decodeSet is the same entries in both formats for the benchmark: the
// captures of a real startup, a flood and systemd's lines, without the
// native capture's 120 000-byte message (one entry that would be half the
// bytes).
func decodeSet(b *testing.B) (exp, js []byte, n int) {
	for _, name := range []string{"sglang", "esc", "fail", "flood"} {
		exp = append(exp, readCapture(b, name, "export")...)
		js = append(js, readCapture(b, name, "json")...)
	}
	return exp, js, bytes.Count(js, []byte("\n"))
}

// BenchmarkDecodeExportVsJSON decodes the same entries from export and
// from JSON in one run, each through the reader Follow uses for it, and
// reports both costs per entry and their ratio.
func BenchmarkDecodeExportVsJSON(b *testing.B) {
	exp, js, n := decodeSet(b)
	run := func(in []byte) {
		next := entries(bytes.NewReader(in), DefaultMaxLine)
		for k := 0; ; k++ {
			if _, err := next(); err != nil {
				if !errors.Is(err, io.EOF) || k != n {
					b.Fatalf("after %d of %d entries: %v", k, n, err)
				}
				return
			}
		}
	}
	allocsExp := testing.AllocsPerRun(5, func() { run(exp) }) / float64(n)
	allocsJSON := testing.AllocsPerRun(5, func() { run(js) }) / float64(n)
	var tExp, tJSON time.Duration
	for b.Loop() {
		t0 := time.Now()
		run(exp)
		t1 := time.Now()
		run(js)
		tExp, tJSON = tExp+t1.Sub(t0), tJSON+time.Since(t1)
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) / float64(n) }
	b.ReportMetric(per(tExp), "export-ns/entry")
	b.ReportMetric(per(tJSON), "json-ns/entry")
	b.ReportMetric(per(tJSON)/per(tExp), "json/export")
	b.ReportMetric(allocsExp, "export-allocs/entry")
	b.ReportMetric(allocsJSON, "json-allocs/entry")
	b.ReportMetric(float64(len(exp))/float64(n), "export-B/entry")
	b.ReportMetric(float64(len(js))/float64(n), "json-B/entry")
}

// memSource streams the same bytes for every command, like a host whose
// journal holds them.
type memSource struct{ data []byte }

func (s memSource) Stream(context.Context, string) (io.ReadCloser, func() error, error) {
	return io.NopCloser(bytes.NewReader(s.data)), func() error { return nil }, nil
}

func (memSource) Generation() uint64 { return 1 }

// BenchmarkFollowCatchUp is Follow's own share of a catch-up, with the
// transport taken out: n entries shaped like the ingest benchmark's, from
// memory, through Follow (decode, cursor checks, events) to an emit that
// counts, in export and in JSON side by side.
func BenchmarkFollowCatchUp(b *testing.B) {
	const n = 20000
	var exp, js bytes.Buffer
	for i := 1; i <= n; i++ {
		line := fmt.Sprintf(`{"__CURSOR":"%s","__REALTIME_TIMESTAMP":"%d","__MONOTONIC_TIMESTAMP":"%d","_BOOT_ID":"%s","PRIORITY":"6","_PID":"162","_SYSTEMD_UNIT":"seq.service","_SYSTEMD_INVOCATION_ID":"%s","MESSAGE":"[2026-12-01 10:00:00 TP0] ingest %d: Decode batch. #running-req: 1, #token: %d, token usage: 0.01, gen throughput (token/s): 42.17"}`,
			cursorOf(i), 1796000000000000+int64(i)*1000, 589409625+i, testBoot, testInv, i, i%4096)
		js.WriteString(line + "\n")
		exp.WriteString(exportOf(line))
	}
	last := fmt.Sprintf(" ingest %d: ", n)
	follow := func(data []byte) {
		got := 0
		err := Follow(context.Background(), memSource{data}, Options{Host: "gpu1", Unit: "seq", Tail: n}, func(ev event.Event) bool {
			if ev.Kind != event.KindJournal {
				b.Fatalf("%s after %d entries: %s", ev.Kind, got, ev.Gap.Message)
			}
			got++
			return !strings.Contains(ev.Journal.Message, last)
		})
		if err != nil || got != n {
			b.Fatalf("%d of %d entries: %v", got, n, err)
		}
	}
	allocsExp := testing.AllocsPerRun(3, func() { follow(exp.Bytes()) }) / n
	allocsJSON := testing.AllocsPerRun(3, func() { follow(js.Bytes()) }) / n
	var tExp, tJSON time.Duration
	for b.Loop() {
		t0 := time.Now()
		follow(exp.Bytes())
		t1 := time.Now()
		follow(js.Bytes())
		tExp, tJSON = tExp+t1.Sub(t0), tJSON+time.Since(t1)
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) / n }
	b.ReportMetric(per(tExp), "export-ns/entry")
	b.ReportMetric(per(tJSON), "json-ns/entry")
	b.ReportMetric(per(tJSON)/per(tExp), "json/export")
	b.ReportMetric(allocsExp, "export-allocs/entry")
	b.ReportMetric(allocsJSON, "json-allocs/entry")
}
