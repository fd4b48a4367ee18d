// Package starter is what `bringup init` makes of the hosts it looked at:
// each host's entry, from the inference units found there (or why it was
// not reached), and the starter config that names them all.
package starter

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bringup-dev/bringup/cmd/bringup/config"
	"github.com/bringup-dev/bringup/cmd/bringup/output"
	"github.com/bringup-dev/bringup/remote/sanitize"
	"github.com/bringup-dev/bringup/remote/systemd"
	"github.com/bringup-dev/bringup/remote/unitname"
)

// Host is what init writes for host name, from what Discover found there
// (or the error that stopped it), and what it reports of it. With
// several units it takes the first one running (else the first by name)
// and notes the others. Unit names are systemd's and ExecStart is the
// host's text: both pass the one sanitiser, and a name that is not a
// valid unit name is left out.
func Host(name string, found []systemd.InferenceUnit, err error) (config.StarterHost, output.Found) {
	h := config.StarterHost{Name: name}
	if err != nil {
		msg := sanitize.String(err.Error())
		h.Note = "not reached by bringup init: " + msg
		return h, output.Found{Host: name, ConnErr: msg}
	}
	var ok []systemd.InferenceUnit
	for _, u := range found {
		if _, verr := unitname.Normalize(u.Name); verr == nil {
			ok = append(ok, u)
		}
	}
	if len(ok) == 0 {
		h.Note = "bringup init found no service running sglang or vllm here: set unit: and engine: by hand"
		return h, output.Found{Host: name}
	}
	pick := ok[0]
	for _, u := range ok {
		if u.ActiveState == "active" {
			pick = u
			break
		}
	}
	h.Unit, h.Engine, h.Port = pick.Name, pick.Engine, pick.Port
	notes := []string{fmt.Sprintf("%s (%s): %s", pick.Name, pick.ActiveState, sanitize.String(pick.ExecStart))}
	var others []string
	for _, u := range ok {
		if u.Name != pick.Name {
			others = append(others, fmt.Sprintf("%s (%s, %s)", u.Name, u.Engine, u.ActiveState))
		}
	}
	if len(others) > 0 {
		notes = append(notes, "also found: "+strings.Join(others, ", "))
	}
	h.Note = strings.Join(notes, "\n")
	return h, output.Found{Host: name, Unit: pick.Name, Engine: pick.Engine, Port: pick.Port, State: sanitize.String(pick.ActiveState), Also: others}
}

// Config is the starter config for hosts, as `bringup init NAMES...` made
// it, naming sshConfig when set; it is held to read back (at path) as
// the config loader reads it, so init never writes what Load would
// refuse.
func Config(path string, names []string, hosts []config.StarterHost, sshConfig string) ([]byte, error) {
	header := fmt.Sprintf("bringup config written by `bringup init %s`\n(units found over SSH; edit freely: see the README for every field)", strings.Join(names, " "))
	data := config.RenderStarter(hosts, sshConfig, header)
	if _, err := config.Parse(path, data); err != nil {
		return nil, fmt.Errorf("the config made does not read back (a bug): %w", err)
	}
	return data, nil
}

// Write writes the config to path, making its directory.
func Write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
