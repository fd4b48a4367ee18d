package startup

import (
	"regexp"
	"strings"
)

// versionPatterns are the lines in which an engine states its own release,
// each with the version as its first group: vLLM's "vLLM API server
// version X" (≤ 2026-01), "vLLM server version X, serving model M" and its
// banner's "version X" (later), the engine's "Initializing … LLM engine
// (vX)"; SGLang prints no version while starting, but its check_env report
// ("sglang: X") and a container image tag (lmsysorg/sglang:vX) do appear
// in logs.
var versionPatterns = []*regexp.Regexp{
	regexp.MustCompile(`vLLM (?:API )?server version v?(\d+\.\d+[\w.+-]*?)(?:,|\s|$)`),
	regexp.MustCompile(`[█▀▄]\s+version\s+v?(\d+\.\d+[\w.+-]*)`),
	regexp.MustCompile(`LLM engine \(v(\d+\.\d+[\w.+-]*)\)`),
	regexp.MustCompile(`(?:^|\s)sglang: v?(\d+\.\d+\.\d+[\w.+-]*)`),
	regexp.MustCompile(`/sglang:v(\d+\.\d+\.\d+(?:\.post\d+)?)`),
}

// versionHints are substrings one of which every versionPatterns match
// holds: the tracker asks of every line, and most lines hold none.
var versionHints = []string{"version", "LLM engine (v", "sglang: ", "/sglang:v"}

// EngineVersion returns the engine release a log line states, or "".
func EngineVersion(line string) string {
	hinted := false
	for _, h := range versionHints {
		if strings.Contains(line, h) {
			hinted = true
			break
		}
	}
	if !hinted {
		return ""
	}
	for _, re := range versionPatterns {
		if m := re.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}
