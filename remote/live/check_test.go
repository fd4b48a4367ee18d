package live

import (
	"testing"
	"time"
)

func TestCheckScript(t *testing.T) {
	tests := []struct {
		name     string
		cmd      string
		env      []string
		deadline time.Duration
		want     string
	}{
		{"the unit's environment, quoted", "python3 -m kdtree_ext.capture_check --mode 'on'", []string{"PYTHONPATH=/opt/kdtree/site", "KDTREE_MODE=on", "NOTE=it's $HOME"}, time.Minute,
			`exec 2>&1; timeout -k 5 60 env 'PYTHONPATH=/opt/kdtree/site' 'KDTREE_MODE=on' 'NOTE=it'\''s $HOME' sh -c 'python3 -m kdtree_ext.capture_check --mode '\''on'\'''`},
		{"a name no shell takes is left out", "true", []string{"A B=1", "=x", "noequals", "OK=1"}, 500 * time.Millisecond,
			`exec 2>&1; timeout -k 5 1 env 'OK=1' sh -c 'true'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkScript(tt.cmd, tt.env, tt.deadline); got != tt.want {
				t.Errorf("checkScript =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
