package complete

import (
	"slices"
	"strings"
	"testing"
)

// TestFlags: each flag's long and short spelling, and which take a value,
// read from a usage as pflag prints it.
func TestFlags(t *testing.T) {
	help := "Usage: bringup watch [flags]\n" +
		"  -c, --config FILE      read this config\n" +
		"      --json             print JSON lines\n" +
		"      --timeout D        give up after D\n" +
		"  -y, --yes              do not ask\n"
	flags, valued := Flags(help)
	if got, want := strings.Join(flags, " "), "--config -c --json --timeout --yes -y"; got != want {
		t.Errorf("flags %q, want %q", got, want)
	}
	var v []string
	for f := range valued {
		v = append(v, f)
	}
	slices.Sort(v)
	if got, want := strings.Join(v, " "), "--config --timeout -c"; got != want {
		t.Errorf("valued %q, want %q", got, want)
	}
}

// TestWords: commands, help's commands, a command's flags, nothing after
// a flag that takes a value, and host names, each kept to the word's
// prefix.
func TestWords(t *testing.T) {
	b := Binary{
		Commands: []Command{{"watch", "print changes; exit 0 serving"}, {"status", "one look"}, {"stop", "stop the unit"}},
		Help: func(name string) string {
			if name == "watch" {
				return "      --json             JSON\n      --timeout D        give up\n"
			}
			return "  -c, --config FILE      config\n"
		},
		Hosts: func([]string) []Candidate {
			return []Candidate{{"gpu1", "host"}, {"gpu2", "host"}, {"rack-a", "group of 2 hosts"}}
		},
	}
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{nil, "watch status stop help gpu1 gpu2 rack-a"},
		{[]string{"st"}, "status stop"},
		{[]string{"h"}, "help"},
		{[]string{"help", "w"}, "watch"},
		{[]string{"watch", "--"}, "--json --timeout"},
		{[]string{"watch", "--timeout", ""}, ""},
		{[]string{"-"}, "--config -c"}, // the console's flags
		{[]string{"stop", "g"}, "gpu1 gpu2"},
		{[]string{"nope", "r"}, "rack-a"},
	} {
		var got []string
		for _, c := range Words(b, tc.words) {
			got = append(got, c.Word)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q: %q, want %q", tc.words, got, tc.want)
		}
	}
	// What `bringup __complete` prints: each word with its description,
	// a command's cut to its first clause.
	var lines []string
	for _, c := range Words(b, []string{"watch", "--"}) {
		lines = append(lines, c.String())
	}
	for _, c := range Words(b, []string{""}) {
		lines = append(lines, c.String())
	}
	want := "--json\tJSON\n--timeout\tgive up\nwatch\tprint changes\nstatus\tone look\nstop\tstop the unit\nhelp\ta command's flags\ngpu1\thost\ngpu2\thost\nrack-a\tgroup of 2 hosts"
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("candidates:\n%s\nwant:\n%s", got, want)
	}
}

// TestBrief: a description is the summary's first clause, cut short.
func TestBrief(t *testing.T) {
	for in, want := range map[string]string{
		"print phase changes; exit 0 serving": "print phase changes",
		"the config FILE (default $X)":        "the config FILE",
		strings.Repeat("a", 80):               strings.Repeat("a", 59) + "…",
		"":                                    "",
	} {
		if got := brief(in); got != want {
			t.Errorf("brief(%q) = %q, want %q", in, got, want)
		}
	}
}
