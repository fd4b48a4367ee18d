package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// jsonBytes encodes s the way journalctl encodes an unprintable value.
func jsonBytes(s string) string {
	parts := make([]string, len(s))
	for i := 0; i < len(s); i++ {
		parts[i] = fmt.Sprint(s[i])
	}
	return "[" + strings.Join(parts, ",") + "]"
}

const (
	testCursor = "s=8db6ebbcc27743fa9a87eac876ec2f22;i=47;b=186afea771f742568d5de7ec8be30736;m=588b3f09;t=66174a391f7a3;x=9060f301efd22284"
	testInv    = "63a38d344d2c41ddaf8f3c7a1ff2e8bd"
	testBoot   = "186afea771f742568d5de7ec8be30736"
)

// sglangLine is an entry as journalctl printed it on a test host.
const sglangLine = `{"PRIORITY":"6","MESSAGE":"[2026-11-30 01:50:48 TP7] Load weight begin. avail mem=139.29 GB","__MONOTONIC_TIMESTAMP":"1485520649","_SYSTEMD_INVOCATION_ID":"` + testInv + `","_PID":"53","_SYSTEMD_UNIT":"sglang.service","__CURSOR":"` + testCursor + `","_BOOT_ID":"` + testBoot + `","__REALTIME_TIMESTAMP":"1796003448616867"}`

func TestDecode(t *testing.T) {
	esc := "\x1b]52;c;SGVsbG8=\x07\x1b]0;pwned\x07\x1b[2Jafter"
	tests := []struct {
		name string
		line string
		want Entry
	}{
		{"sglang line", sglangLine, Entry{
			Cursor: testCursor, Realtime: time.UnixMicro(1796003448616867), BootID: testBoot,
			Unit: "sglang.service", InvocationID: testInv, PID: 53, Priority: 6,
			Message: "[2026-11-30 01:50:48 TP7] Load weight begin. avail mem=139.29 GB",
		}},
		{"systemd line about the unit", `{"MESSAGE":"Started sglang.service - SGLang.","MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","UNIT":"sglang.service","INVOCATION_ID":"` + testInv + `","_PID":"1","PRIORITY":"6","JOB_TYPE":"start","JOB_RESULT":"done","_SYSTEMD_UNIT":"init.scope"}`, Entry{
			Unit: "sglang.service", InvocationID: testInv, PID: 1, Priority: 6, MessageID: "39f53479d3a045ac8e11786248231fbf",
			Message: "Started sglang.service - SGLang.", Fields: map[string]string{"JOB_TYPE": "start", "JOB_RESULT": "done"},
		}},
		{"systemd line from init.scope", `{"MESSAGE":"sglang.service: Main process exited, code=exited, status=1/FAILURE","UNIT":"sglang.service","_SYSTEMD_UNIT":"init.scope","EXIT_CODE":"exited","EXIT_STATUS":"1","PRIORITY":"5"}`, Entry{
			Unit: "sglang.service", Priority: 5, Message: "sglang.service: Main process exited, code=exited, status=1/FAILURE",
			Fields: map[string]string{"EXIT_CODE": "exited", "EXIT_STATUS": "1"},
		}},
		{"byte array with escapes", `{"MESSAGE":` + jsonBytes(esc) + `}`, Entry{Priority: 6, Message: esc}},
		{"byte array of invalid utf-8", `{"MESSAGE":[255,254,0,13,10]}`, Entry{Priority: 6, Message: "\xff\xfe\x00\r\n"}},
		{"progress bar", `{"MESSAGE":` + jsonBytes("\rLoading: 12% 1/8") + `,"_LINE_BREAK":"line-max"}`, Entry{
			Priority: 6, Message: "\rLoading: 12% 1/8", Fields: map[string]string{"_LINE_BREAK": "line-max"},
		}},
		{"null message", `{"MESSAGE":null}`, Entry{Priority: 6, Truncated: true,
			Message: "[message over 4096 bytes not shown: journalctl ran without --all]"}},
		{"repeated message joined", `{"MESSAGE":["one",[116,119,111],null,"three"]}`, Entry{Priority: 6, Message: "one\ntwo\nthree"}},
		{"a service's own UNIT does not override", `{"_SYSTEMD_UNIT":"a.service","UNIT":"b.service","MESSAGE":""}`, Entry{Priority: 6, Unit: "a.service"}},
		{"repeated unit: the first", `{"UNIT":["a.service","b.service"],"MESSAGE":""}`, Entry{Priority: 6, Unit: "a.service"}},
		{"escapes in strings", `{"MESSAGE":"tab\there \"q\" \\ \u00e9 \ud83d\ude00 \u001b[2J","_PID":"7"}`, Entry{
			Priority: 6, PID: 7, Message: "tab\there \"q\" \\ é 😀 \x1b[2J",
		}},
		{"lone surrogate", `{"MESSAGE":"a\ud800b"}`, Entry{Priority: 6, Message: "a\uFFFDb"}},
		{"unknown fields skipped", `{"X":"s","Y":[1,[2,3]],"Z":true,"MESSAGE":"m"}`, Entry{}},
		{"bad identifiers dropped", `{"MESSAGE_ID":"\u001b]0;x\u0007","UNIT":"a b","__CURSOR":"s='x'","_BOOT_ID":"zz","MESSAGE":"m"}`, Entry{Priority: 6, Message: "m"}},
		{"suppression notice", `{"MESSAGE_ID":"` + SuppressedID + `","MESSAGE":"Suppressed 17500 messages from flood.service","_SYSTEMD_UNIT":"systemd-journald.service","OBJECT_SYSTEMD_UNIT":"flood.service","N_DROPPED":"17500"}`, Entry{
			Priority: 6, MessageID: SuppressedID, Message: "Suppressed 17500 messages from flood.service",
			Unit: "systemd-journald.service", ObjectUnit: "flood.service", Dropped: 17500,
		}},
		{"whitespace", " { \"MESSAGE\" : \"m\" , \"_PID\" : \"3\" } \r", Entry{Priority: 6, PID: 3, Message: "m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.line))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if tt.name == "unknown fields skipped" {
				if got.Message != "m" {
					t.Fatalf("message %q", got.Message)
				}
				return
			}
			if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, line := range []string{
		``, `[]`, `{`, `{"MESSAGE"}`, `{"MESSAGE":}`, `{"MESSAGE":"x"`, `{"MESSAGE":"x",}`,
		`{"MESSAGE":[1,2`, `{"MESSAGE":[256]}`, `{"MESSAGE":[1 2]}`, `{"MESSAGE":"\x"}`, `{"MESSAGE":"\u12"}`,
		`{"_PID":"x"}`, `{"PRIORITY":"6"} trailing`, `{"MESSAGE":{"a":1}}`, `{"MESSAGE":nul}`,
		`{"M":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}`,
	} {
		if e, err := Decode([]byte(line)); err == nil {
			t.Errorf("Decode(%q) = %+v, want an error", line, e)
		}
	}
}

func TestDecodeTruncates(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	for _, enc := range []string{`"` + long + `"`, jsonBytes(long)} {
		e, err := DecodeLimit([]byte(`{"MESSAGE":`+enc+`}`), 101)
		if err != nil {
			t.Fatal(err)
		}
		if !e.Truncated || len(e.Message) != 100 || !utf8.ValidString(e.Message) {
			t.Errorf("cut to %d bytes (valid %v, truncated %v), want 100 valid", len(e.Message), utf8.ValidString(e.Message), e.Truncated)
		}
	}
	e, err := DecodeLimit([]byte(`{"MESSAGE":[255,255,255,255]}`), 2)
	if err != nil || e.Message != "\xff\xff" || !e.Truncated {
		t.Errorf("binary cut: %q %v %v", e.Message, e.Truncated, err)
	}
	e, err = DecodeLimit([]byte(`{"MESSAGE":"short"}`), 5)
	if err != nil || e.Message != "short" || e.Truncated {
		t.Errorf("at the limit: %q %v %v", e.Message, e.Truncated, err)
	}
}

func TestSuppressed(t *testing.T) {
	tests := []struct {
		e     Entry
		n     int
		isSup bool
	}{
		{Entry{MessageID: SuppressedID, Dropped: 5, Message: "Suppressed 5 messages from x.service"}, 5, true},
		{Entry{MessageID: SuppressedID, Message: "Suppressed 1200 messages from x.service"}, 1200, true},
		{Entry{MessageID: SuppressedID, Message: "something else"}, 0, true},
		{Entry{Message: "Suppressed 5 messages from x.service"}, 0, false},
	}
	for _, tt := range tests {
		if n, ok := tt.e.Suppressed(); n != tt.n || ok != tt.isSup {
			t.Errorf("%+v: Suppressed() = %d, %v; want %d, %v", tt.e, n, ok, tt.n, tt.isSup)
		}
	}
}

// TestDecodeAgreesWithEncodingJSON checks the hand-written parser against
// encoding/json on string values with every kind of escape.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range []string{"plain", "quote\"back\\slash", "\x00\x01\x1f\x7f", "ünï €", "line\nbreak\r\t", "<>&\u2028"} {
		raw, _ := json.Marshal(map[string]string{"MESSAGE": s})
		e, err := Decode(raw)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if e.Message != s {
			t.Errorf("%q decoded to %q, want %q", raw, e.Message, s)
		}
	}
}

func TestReaderLongLines(t *testing.T) {
	long := `{"MESSAGE":"` + strings.Repeat("x", 300<<10) + `","__CURSOR":"` + testCursor + `","__REALTIME_TIMESTAMP":"1796003448616867","_PID":"9","_SYSTEMD_UNIT":"u.service"}`
	in := sglangLine + "\n" + long + "\n" + sglangLine + "\n" + `{"MESSAGE":"last, no newline"}`
	r := NewReader(strings.NewReader(in), 100<<10)
	var got []string
	for {
		line, tail, over, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			got = append(got, "partial:"+string(line))
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if over {
			e := DecodeOversize(line, tail)
			if e.Cursor != testCursor || e.PID != 9 || e.Unit != "u.service" || !e.Truncated || e.Message != OversizeMessage ||
				!e.Realtime.Equal(time.UnixMicro(1796003448616867)) {
				t.Errorf("oversize entry %+v", e)
			}
			got = append(got, "oversize")
			continue
		}
		e, err := Decode(line)
		if err != nil {
			t.Fatalf("line %d: %v", len(got), err)
		}
		got = append(got, e.Message[:4])
	}
	if want := `[202 oversize [202 partial:{"MESSAGE":"last, no newline"}`; strings.Join(got, " ") != want {
		t.Errorf("lines %q, want %q", strings.Join(got, " "), want)
	}
}

func TestReaderNeverFailsOnHugeLines(t *testing.T) {
	// A line far over every buffer, of bytes the JSON can't end on.
	in := bytes.Repeat([]byte("9,"), 2<<20)
	r := NewReader(io.MultiReader(bytes.NewReader(in), strings.NewReader("\n"+sglangLine+"\n")), 4096)
	line, tail, over, err := r.Next()
	if err != nil || !over || len(line) != 4096 || len(tail) != tailKeep-1 {
		t.Fatalf("first: %d %d %v %v", len(line), len(tail), over, err)
	}
	line, _, over, err = r.Next()
	if err != nil || over || string(line) != sglangLine {
		t.Fatalf("second: %q %v %v", line, over, err)
	}
}

func TestPlainFieldIgnoresValues(t *testing.T) {
	// Inside a string every quote is escaped, so a look-alike in a message
	// is never taken for the field.
	raw, _ := json.Marshal(map[string]string{"MESSAGE": `"__CURSOR":"s=evil"`, "__CURSOR": "s=good"})
	if v, ok := plainField(raw, "__CURSOR"); !ok || v != "s=good" {
		t.Errorf("plainField = %q, %v", v, ok)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(sglangLine))
	f.Add([]byte(`{"MESSAGE":[27,93,48,59,7],"UNIT":["a","b"],"X":null}`))
	f.Add([]byte(`{"MESSAGE":"\ud83d\ude00\u0000","_PID":"1"}`))
	f.Add([]byte(`{"MESSAGE":[[1,2],"x",null]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := DecodeLimit(line, 64)
		if err != nil {
			return
		}
		if len(e.Message) > 64 {
			t.Errorf("message of %d bytes over the limit", len(e.Message))
		}
		for _, id := range []string{e.MessageID, e.InvocationID, e.BootID} {
			if id != "" && !validID(id) {
				t.Errorf("invalid id %q kept", id)
			}
		}
		if e.Cursor != "" && !validCursor(e.Cursor) {
			t.Errorf("invalid cursor %q kept", e.Cursor)
		}
		// Where encoding/json reads the same MESSAGE string, both agree.
		var m map[string]json.RawMessage
		if !utf8.Valid(line) || json.Unmarshal(line, &m) != nil || len(m["MESSAGE"]) == 0 || m["MESSAGE"][0] != '"' {
			return
		}
		var want string
		if err := json.Unmarshal(m["MESSAGE"], &want); err != nil {
			return
		}
		if want, _ = cut(want, 64, false); e.Message != want {
			t.Errorf("message %q, encoding/json says %q", e.Message, want)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	line := []byte(sglangLine)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeByteArray(b *testing.B) {
	line := []byte(`{"MESSAGE":` + jsonBytes("\rLoading safetensors checkpoint shards:  12% Completed | 1/8 [00:00<00:03,  2.18it/s]") + `,"__CURSOR":"` + testCursor + `","_PID":"53"}`)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(line); err != nil {
			b.Fatal(err)
		}
	}
}
