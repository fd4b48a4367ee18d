package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/bringup-dev/bringup/cmd/bringup/cli"
)

// TestConventions: help asked for goes to stdout with exit 0; a usage
// error goes to stderr with exit 3 and, for a near miss, a did-you-mean;
// --version and -v print the version.
func TestConventions(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string // a substring of each; "" = must be empty
	}{
		{args: []string{"--help"}, stdout: "Exit codes:"},
		{args: []string{"-h"}, stdout: "bringup watch"},
		{args: []string{"help"}, stdout: "130  interrupted"},
		{args: []string{"help", "watch"}, stdout: "Usage: bringup watch"},
		{args: []string{"watch", "--help"}, stdout: "--timeout D"},
		{args: []string{"demo", "-h"}, stdout: "--record FILE"},
		{args: []string{"help", "nosuch"}, code: exitUsage, stderr: `no command "nosuch"`},
		{args: []string{"help", "wtach"}, code: exitUsage, stderr: "did you mean watch?"},
		{args: []string{"wtach"}, code: exitUsage, stderr: "unknown command \"wtach\" — did you mean watch?\nRun 'bringup --help' for usage.\n"},
		{args: []string{"stauts"}, code: exitUsage, stderr: "did you mean status?"},
		{args: []string{"watch", "--jsno", "--demo"}, code: exitUsage, stderr: "did you mean --json?"},
		{args: []string{"watch", "-demo"}, code: exitUsage, stderr: "two dashes: --demo"},
		{args: []string{"--version"}, stdout: "bringup "},
		{args: []string{"-v"}, stdout: "bringup "},
		{args: []string{"version"}, stdout: "bringup "},
	} {
		var out, errOut syncBuffer
		code := run(context.Background(), testEnv(&out, &errOut), tc.args)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tc.args, code, tc.code, errOut.String())
		}
		for _, s := range []struct{ name, got, want string }{{"stdout", out.String(), tc.stdout}, {"stderr", errOut.String(), tc.stderr}} {
			if s.want == "" && s.got != "" || !strings.Contains(s.got, s.want) {
				t.Errorf("%q: %s %q, want %q", tc.args, s.name, s.got, s.want)
			}
		}
	}
}

// TestReadmeExitCodes: the README's exit-code table is the code's.
func TestReadmeExitCodes(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `(\\d+)` \\| (.+) \\|$").FindAllStringSubmatch(string(data), -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1]+" "+r[2])
	}
	var want []string
	for _, c := range cli.ExitCodes() {
		want = append(want, fmt.Sprintf("%d %s", c.Code, c.Meaning))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("README exit codes:\n%s\nwant (cli.ExitCodes, as --help prints them):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
