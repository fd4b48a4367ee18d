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
		Commands: []string{"watch", "status", "stop"},
		Help: func(name string) string {
			if name == "watch" {
				return "      --json             JSON\n      --timeout D        give up\n"
			}
			return "  -c, --config FILE      config\n"
		},
		Hosts: func([]string) []string { return []string{"gpu1", "gpu2", "rack-a"} },
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
		if got := strings.Join(Words(b, tc.words), " "); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.words, got, tc.want)
		}
	}
}
