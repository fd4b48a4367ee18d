package livefleet

import (
	"testing"

	"github.com/bringup-dev/bringup/cmd/bringup/config"
)

// TestSourceIOs checks that the IO table and the config's kinds of source
// name the same kinds, and that each kind's facts and IO agree: a kind
// whose hosts come from it discovers them.
func TestSourceIOs(t *testing.T) {
	kinds := config.SourceKinds()
	if len(kinds) != len(sourceIOs) {
		t.Errorf("%d kinds of source in the config, %d in the IO table", len(kinds), len(sourceIOs))
	}
	for _, k := range kinds {
		src, ok := sourceIOs[k.Name]
		if !ok {
			t.Errorf("source %s: no row in the IO table", k.Name)
			continue
		}
		if src.specs == nil {
			t.Errorf("source %s: no way to build the fleet", k.Name)
		}
		if k.HostsFromIt != (src.discover != nil) {
			t.Errorf("source %s: hosts from it %v, discover set %v", k.Name, k.HostsFromIt, src.discover != nil)
		}
	}
}

// TestSurveyBySource: doctor looks at a log store once for every host,
// and at nothing for SSH.
func TestSurveyBySource(t *testing.T) {
	ssh := &config.Config{}
	s, err := Survey(t.Context(), ssh, nil, 0, nil)
	if s != nil || err != nil {
		t.Errorf("ssh: survey %v, err %v; want none", s, err)
	}
	unknown := &config.Config{Source: config.Source{Kind: "carrier-pigeon"}}
	if _, err := Survey(t.Context(), unknown, nil, 0, nil); err == nil {
		t.Error("a kind without IO: no error")
	}
	if err := Discover(t.Context(), nil, ssh, nil); err == nil {
		t.Error("discover over ssh: no error")
	}
}
