package startup

import (
	"strconv"
	"strings"
	"sync"
)

// sysKind is what one of systemd's own lines about the unit says (§6.4).
type sysKind uint8

const (
	sysNone        sysKind = iota
	sysStarting            // a start job began: a new run
	sysStarted             // the start job is done (Type=simple: forked, not ready)
	sysStopping            // a stop job began
	sysStopped             // the unit stopped
	sysFailedStart         // the start job failed
	sysExited              // the main process exited
	sysResult              // the unit failed with a result
	sysRestart             // an automatic restart is scheduled
	sysSuccess             // deactivated successfully
	sysStartLimit          // start request repeated too quickly
	sysOOM                 // the kernel OOM killer killed a process of the unit
)

// sysByID maps systemd's MESSAGE_IDs (systemd.catalog, sd-messages.h) to
// what they say, so lines that carry one need no text matching.
var sysByID = map[string]sysKind{
	"7d4958e842da4a758f6c1cdc7b36dcc5": sysStarting,
	"39f53479d3a045ac8e11786248231fbf": sysStarted,
	"be02cf6855d2428ba40df7e9d022f03d": sysFailedStart,
	"de5b426a63be47a7b6ac3eaac82e2f6f": sysStopping,
	"9d1aaa27d60140bd96365438aad20286": sysStopped,
	"98e322203f7a4ed290d09fe03c09fe15": sysExited,
	"d9b373ed55a64feb8242e02dbe79a49c": sysResult,
	"7ad2d189f7e94e70a38c781354912448": sysSuccess,
	"5eb03494b6584870a536b337290809b3": sysRestart,
	"fe6faa94e7774663a0da52717891d8ef": sysOOM,
	"d989611b15e44c9dbf31e3c81256e4ed": sysOOM,
}

// sysText recognises the same lines by their text, for producers that do
// not pass MESSAGE_ID on. Prefix rules (job messages) only count at the
// start of a line that is plausibly systemd's, since engines print
// "Starting to load model..." too.
var sysText = []struct {
	kw     string
	kind   sysKind
	prefix bool
}{
	{"Starting ", sysStarting, true},
	{"Started ", sysStarted, true},
	{"Stopping ", sysStopping, true},
	{"Stopped ", sysStopped, true},
	{"Failed to start ", sysFailedStart, true},
	{": Main process exited, code=", sysExited, false},
	{": Failed with result '", sysResult, false},
	{": Scheduled restart job, restart counter is at", sysRestart, false},
	{": Deactivated successfully.", sysSuccess, false},
	{": Start request repeated too quickly.", sysStartLimit, false},
	// Only on a line plausibly systemd's (see classifySys): Ray's list of
	// what may have killed a worker says "killed by the OOM killer" too.
	{"killed by the OOM killer", sysOOM, false},
}

// ruleKind says which table a keyword id refers to.
type ruleKind uint8

const (
	refSys ruleKind = iota
	refDetect
	refPhase
	refFail
	refTB // the traceback header
	refMetric
)

type ruleRef struct {
	kind ruleKind
	pack int
	idx  int
}

// ruleSet joins the systemd table and every pack's rules into one keyword
// index, so a line is scanned once whatever the number of rules. Ids are
// given in the order the tracker wants to handle hits: systemd lines,
// engine detection, then each pack's phase and failure rules in order.
type ruleSet struct {
	packs   []*CompiledPack
	refs    []ruleRef
	idx     *kwIndex
	frames  *frameIndex
	tbID    int // the id of the traceback header keyword
	frameID int // the id of a frame's `File "`
	faultID int // the id of faulthandler's "(most recent call first)"
}

func newRuleSet(packs []*CompiledPack) *ruleSet {
	s := &ruleSet{packs: packs, idx: newKWIndex(), frames: newFrameIndex(packs)}
	add := func(kw string, r ruleRef) {
		s.idx.add(kw, len(s.refs))
		s.refs = append(s.refs, r)
	}
	for i, r := range sysText {
		add(r.kw, ruleRef{kind: refSys, idx: i})
	}
	s.tbID = len(s.refs)
	add(tbHeader, ruleRef{kind: refTB})
	s.faultID = len(s.refs)
	add(faultHeader, ruleRef{kind: refTB})
	s.frameID = len(s.refs)
	add(`File "`, ruleRef{kind: refTB})
	for p, c := range packs {
		for _, kw := range c.detect {
			add(kw, ruleRef{kind: refDetect, pack: p})
		}
	}
	for p, c := range packs {
		for i, r := range c.phases {
			for _, kw := range r.Keywords {
				add(kw, ruleRef{kind: refPhase, pack: p, idx: i})
			}
		}
		for i, r := range c.failures {
			for _, kw := range r.Keywords {
				add(kw, ruleRef{kind: refFail, pack: p, idx: i})
			}
		}
		for i, r := range c.metrics {
			for _, kw := range r.Keywords {
				add(kw, ruleRef{kind: refMetric, pack: p, idx: i})
			}
		}
	}
	return s
}

// words is the length of the hit bitset for this set.
func (s *ruleSet) words() int { return (len(s.refs) + 63) / 64 }

// builtinSet is the rule set of the built-in packs, built once and shared.
var builtinSet = sync.OnceValue(func() *ruleSet { return newRuleSet(builtinCompiled()) })

// classifySys says which systemd line msg is, if any. hit holds the
// keyword hits of the line.
func classifySys(msgID, msg string, pid int, hit []uint64, refs []ruleRef) sysKind {
	if k, ok := sysByID[msgID]; ok {
		return k
	}
	plausible := msgID != "" || pid == 1 || strings.Contains(msg, ".service")
	for i := range sysText {
		// sysText ids are the first len(sysText) ids of every rule set.
		if hit[i>>6]&(1<<(i&63)) == 0 || refs[i].kind != refSys {
			continue
		}
		r := sysText[i]
		if r.prefix && (!plausible || !strings.HasPrefix(msg, r.kw)) || r.kind == sysOOM && !plausible {
			continue
		}
		return r.kind
	}
	return sysNone
}

// restartCounter reads N from "Scheduled restart job, restart counter is at N."
// or the N_RESTARTS field; -1 when neither says.
func restartCounter(msg string, fields map[string]string) int {
	if v, ok := fields["N_RESTARTS"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	_, rest, ok := strings.Cut(msg, "restart counter is at ")
	if !ok {
		return -1
	}
	rest = strings.TrimSuffix(rest, ".")
	n, err := strconv.Atoi(rest)
	if err != nil {
		return -1
	}
	return n
}

// unitResult reads the result from "Failed with result 'exit-code'." or
// the UNIT_RESULT field.
func unitResult(msg string, fields map[string]string) string {
	if v := fields["UNIT_RESULT"]; v != "" {
		return v
	}
	_, rest, ok := strings.Cut(msg, "Failed with result '")
	if !ok {
		return ""
	}
	r, _, _ := strings.Cut(rest, "'")
	return r
}

// exitOK reports whether a "Main process exited" line says the process
// ended cleanly (status 0), from EXIT_STATUS/EXIT_CODE or the text.
func exitOK(msg string, fields map[string]string) bool {
	if st, ok := fields["EXIT_STATUS"]; ok {
		return st == "0" && (fields["EXIT_CODE"] == "" || fields["EXIT_CODE"] == "exited")
	}
	return strings.Contains(msg, "code=exited, status=0/")
}
