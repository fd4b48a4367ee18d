package ui

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/bringup-dev/bringup/kernels"
	"github.com/bringup-dev/bringup/remote"
)

// paletteCommand is one command of the `:` palette.
type paletteCommand struct {
	name  string
	args  string // usage after the name
	help  string
	hosts bool // takes HOST… (names, groups, marked, all)
	// action is the action the command starts, for the actions' own
	// commands (their specs' palette entries); "" for the console's.
	action remote.ActionKind
}

// paletteCommands is every command, in the order help and completion give
// them: the host view, the actions' commands from their specs (each leads
// to the same dialogs as its key), then the console's own.
func paletteCommands() []paletteCommand {
	return paletteCommandsOf(remote.Specs())
}

// paletteCommandsOf is the palette with the actions of specs.
func paletteCommandsOf(specs []remote.ActionSpec) []paletteCommand {
	out := []paletteCommand{{"host", "NAME", "open the host view", false, ""}}
	for _, s := range specs {
		if p := s.Palette; p != nil {
			out = append(out, paletteCommand{p.Name, p.Args, p.Help, true, s.Kind})
		}
	}
	return append(out,
		paletteCommand{"rollout", "HOST… [KERNEL=MODE]", "a gated rollout, host by host", true, ""},
		paletteCommand{"reconnect", "HOST…", "dial again after a host-key or auth fix", true, ""},
		paletteCommand{"filter", "TEXT", "filter the table (name or regexp, phase: mode: state:)", false, ""},
		paletteCommand{"group", "[BY|off]", "group the table's rows (group, a label key; t)", false, ""},
		paletteCommand{"follow", "", "follow the log on/off (host view)", false, ""},
		paletteCommand{"wrap", "", "wrap log lines on/off", false, ""},
		paletteCommand{"help", "", "this list", false, ""},
		paletteCommand{"quit", "", "quit (also q)", false, ""},
	)
}

// paletteCommandNamed is the command called name ("q" is quit).
func paletteCommandNamed(name string) (paletteCommand, bool) {
	if name == "q" {
		name = "quit"
	}
	for _, c := range paletteCommands() {
		if c.name == name {
			return c, true
		}
	}
	return paletteCommand{}, false
}

// paletteEnv is what the palette resolves names against: a snapshot
// taken from the model when a line is run or completed.
type paletteEnv struct {
	hosts    []string            // every host, in table order
	shown    []string            // the hosts the table shows (under its filter)
	marked   []string            // the marked hosts among those shown
	hidden   int                 // marked hosts the filter hides
	groups   map[string][]string // group → hosts
	groupBy  []string            // the groupings the table has: "group", label keys
	cat      kernels.Catalog
	hostView bool // the host view is open (follow works there only)
}

// paletteCall is a parsed line: a command and its resolved arguments.
type paletteCall struct {
	cmd          string            // the command's name
	action       remote.ActionKind // the action it starts; "": none
	hosts        []string          // resolved, in order, each once
	kernel, mode string            // a KERNEL=MODE, or redeploy's KERNEL
	text         string            // filter's text
}

// parsePalette reads one line of the palette and resolves its hosts,
// kernel and mode; the error says what was wrong and what is valid.
func parsePalette(line string, env paletteEnv) (paletteCall, error) {
	words := strings.Fields(line)
	if len(words) == 0 {
		return paletteCall{}, fmt.Errorf("no command: %s", strings.Join(commandNames(), ", "))
	}
	c, ok := paletteCommandNamed(words[0])
	if !ok {
		return paletteCall{}, fmt.Errorf("unknown command %q: %s", words[0], strings.Join(commandNames(), ", "))
	}
	call := paletteCall{cmd: c.name, action: c.action}
	args := words[1:]
	switch c.name {
	case "host":
		if len(args) != 1 {
			return call, fmt.Errorf("host: name one host: %s", listNames(env.hosts))
		}
		if !slices.Contains(env.hosts, args[0]) {
			return call, unknownHost(args[0], env)
		}
		call.hosts = args
		return call, nil
	case "filter":
		_, rest, _ := strings.Cut(strings.TrimSpace(line), words[0])
		call.text = strings.TrimSpace(rest)
		if _, err := parseHostFilter(call.text, env.hosts, env.cat); err != nil {
			return call, err
		}
		return call, nil
	case "group":
		switch {
		case len(args) > 1:
			return call, fmt.Errorf("group: one grouping or off: %s", strings.Join(append(slices.Clone(env.groupBy), "off"), ", "))
		case len(env.groupBy) == 0:
			return call, fmt.Errorf("group: no groups to group by: add groups: or host labels: to the config")
		case len(args) == 1 && args[0] != "off" && !slices.Contains(env.groupBy, args[0]):
			return call, fmt.Errorf("group: unknown grouping %q: %s", args[0], strings.Join(append(slices.Clone(env.groupBy), "off"), ", "))
		case len(args) == 1:
			call.text = args[0]
		}
		return call, nil
	case "follow":
		if !env.hostView {
			return call, fmt.Errorf("follow: only in the host view (enter or :host NAME opens one)")
		}
	}
	if !c.hosts {
		if len(args) > 0 {
			return call, fmt.Errorf("%s takes no arguments", c.name)
		}
		return call, nil
	}
	var hostWords []string
	for i, a := range args {
		switch {
		case strings.Contains(a, "="):
			if c.name != "mode" && c.name != "rollout" {
				return call, fmt.Errorf("%s takes hosts, not %q", c.name, a)
			}
			if call.kernel != "" {
				return call, fmt.Errorf("%s: one KERNEL=MODE, not %q and %q", c.name, call.kernel+"="+call.mode, a)
			}
			k, md, err := env.cat.ParseAssignment(a)
			if err != nil {
				return call, err
			}
			call.kernel, call.mode = k.Name, md.Name
		case c.name == "redeploy" && i == len(args)-1 && len(args) > 1 && isKernel(a, env.cat):
			call.kernel = a
		default:
			hostWords = append(hostWords, a)
		}
	}
	if len(hostWords) == 0 {
		return call, fmt.Errorf("%s: name the hosts (%s %s): a host, a group, marked or all", c.name, c.name, c.args)
	}
	hosts, err := resolveHosts(hostWords, env)
	if err != nil {
		return call, err
	}
	call.hosts = hosts
	switch {
	case c.name == "mode" && call.kernel == "":
		return call, fmt.Errorf("mode: give KERNEL=MODE: %s", strings.Join(assignments(env.cat), ", "))
	case c.name == "redeploy" && call.kernel == "":
		if len(env.cat.Kernels) == 0 {
			return call, fmt.Errorf("redeploy: no kernels configured")
		}
		call.kernel = env.cat.Kernels[0].Name
	}
	return call, nil
}

// resolveHosts turns host words into host names: all is every host the
// table shows, marked the marked ones it shows, a group its hosts, a
// name itself.
func resolveHosts(words []string, env paletteEnv) ([]string, error) {
	var out []string
	add := func(names ...string) {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	for _, w := range words {
		switch g, isGroup := env.groups[w]; {
		case w == "all":
			if len(env.shown) == 0 {
				return nil, fmt.Errorf("all: the filter shows no hosts (esc on the table clears it)")
			}
			add(env.shown...)
		case w == "marked":
			if len(env.marked) == 0 {
				if env.hidden > 0 {
					return nil, fmt.Errorf("marked: the %d marked hosts are hidden by the filter", env.hidden)
				}
				return nil, fmt.Errorf("marked: no hosts are marked (space marks the host under the cursor)")
			}
			add(env.marked...)
		case slices.Contains(env.hosts, w):
			add(w)
		case isGroup:
			for _, n := range g {
				if slices.Contains(env.hosts, n) {
					add(n)
				}
			}
		default:
			return nil, unknownHost(w, env)
		}
	}
	return out, nil
}

// unknownHost names the word that is no host and the hosts there are.
func unknownHost(w string, env paletteEnv) error {
	return fmt.Errorf("unknown host %q: %s", w, listNames(env.hosts))
}

// listNames lists names for an error line: all of a small fleet, the
// first few and the count of a large one.
func listNames(names []string) string {
	const most = 8
	if len(names) == 0 {
		return "no hosts yet"
	}
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:most], ", ") + fmt.Sprintf(", … (%d hosts)", len(names))
}

func isKernel(s string, cat kernels.Catalog) bool {
	_, ok := cat.Kernel(s)
	return ok
}

// assignments is every KERNEL=MODE of the catalog.
func assignments(cat kernels.Catalog) []string {
	var out []string
	for _, k := range cat.Kernels {
		for _, m := range k.Modes {
			out = append(out, k.Name+"="+m.Name)
		}
	}
	return out
}

func commandNames() []string {
	var out []string
	for _, c := range paletteCommands() {
		out = append(out, c.name)
	}
	return out
}

// completePalette is what the last word of line may become: base is the
// line without that word, and each candidate completes it.
func completePalette(line string, env paletteEnv) (base string, cands []string) {
	i := strings.LastIndexAny(line, " \t") + 1
	base, word := line[:i], line[i:]
	before := strings.Fields(base)
	if len(before) == 0 {
		return base, withPrefix(commandNames(), word)
	}
	c, ok := paletteCommandNamed(before[0])
	if !ok {
		return base, nil
	}
	args := before[1:]
	switch {
	case c.name == "host":
		if len(args) > 0 {
			return base, nil
		}
		return base, withPrefix(env.hosts, word)
	case c.name == "filter":
		return base, withPrefix(filterWords(env), word)
	case c.name == "group" && len(args) == 0:
		return base, withPrefix(append(slices.Clone(env.groupBy), "off"), word)
	case !c.hosts:
		return base, nil
	}
	words := append([]string{"all", "marked"}, sortedKeys(env.groups)...)
	words = append(words, env.hosts...)
	words = slices.DeleteFunc(words, func(w string) bool { return slices.Contains(args, w) })
	hasAssign := slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "=") })
	switch {
	case c.name == "redeploy" && len(args) > 0:
		words = append(words, kernelNames(env.cat)...)
	case (c.name == "mode" || c.name == "rollout") && !hasAssign:
		if strings.Contains(word, "=") {
			words = nil
		}
		words = append(words, assignments(env.cat)...)
	}
	return base, withPrefix(words, word)
}

// filterWords is what a filter word may be: a key and value, or a host.
func filterWords(env paletteEnv) []string {
	var out []string
	for _, p := range allPhases() {
		out = append(out, "phase:"+string(p))
	}
	for _, md := range kernelModeNames(env.cat) {
		out = append(out, "mode:"+md)
	}
	for _, s := range unitStates() {
		out = append(out, "state:"+s)
	}
	return append(out, env.hosts...)
}

func kernelNames(cat kernels.Catalog) []string {
	var out []string
	for _, k := range cat.Kernels {
		out = append(out, k.Name)
	}
	return out
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// withPrefix is the words that start with prefix, in any case.
func withPrefix(words []string, prefix string) []string {
	var out []string
	p := strings.ToLower(prefix)
	for _, w := range words {
		if strings.HasPrefix(strings.ToLower(w), p) {
			out = append(out, w)
		}
	}
	return out
}

// maxHistory is how many lines the palette remembers.
const maxHistory = 100

// cmdPalette is the `:` prompt: the line, its history, and the tab cycle
// through the completions of its last word.
type cmdPalette struct {
	input textinput.Model
	hist  []string
	pos   int    // the history entry shown; len(hist) is the line being typed
	draft string // the line being typed, kept while browsing history
	base  string // the line without the word being completed
	cands []string
	cur   int // the candidate in the line; -1 before the first tab
	// stale says the line is one that failed: a key that edits (backspace,
	// the arrows) fixes it, a character typed replaces it.
	stale bool
}

func newCmdPalette() cmdPalette {
	ti := textinput.New()
	ti.Prompt = ":"
	ti.Placeholder = "command (tab completes, :help lists them)"
	ti.CharLimit = 500
	return cmdPalette{input: ti, cur: -1}
}

// env is the model's side of the palette's world right now.
func (m *Model) paletteEnv() paletteEnv {
	env := paletteEnv{hosts: m.table.hostNames(), shown: m.table.shown(), marked: m.table.shownMarked(),
		groups: m.opts.Groups, cat: m.opts.Kernels, hostView: m.focus.view() == focusHost}
	for _, g := range m.table.groupings {
		env.groupBy = append(env.groupBy, g.by)
	}
	env.hidden = len(m.table.marked) - len(env.marked)
	return env
}

// openPalette answers `:`.
func (m *Model) openPalette() tea.Cmd {
	p := &m.commandPalette
	m.focus.push(focusPalette)
	p.input.SetValue("")
	p.pos, p.draft, p.stale = len(p.hist), "", false
	p.endCycle()
	return p.input.Focus()
}

// closePalette closes the palette, back to the view under it.
func (m *Model) closePalette() {
	m.focus.pop()
	m.commandPalette.input.Blur()
	m.commandPalette.endCycle()
}

func (p *cmdPalette) endCycle() { p.base, p.cands, p.cur = "", nil, -1 }

// paletteKey edits the palette: tab and shift+tab cycle completions,
// up and down walk the history, enter runs, esc closes.
func (m *Model) paletteKey(msg tea.KeyPressMsg) tea.Cmd {
	p := &m.commandPalette
	stale := p.stale
	p.stale = false
	switch msg.String() {
	case "esc":
		m.closePalette()
		return nil
	case "enter":
		return m.runPaletteLine()
	case ":":
		if p.input.Value() == "" || stale {
			// The prompt is a colon already: `::bench` would be no command.
			p.input.SetValue("")
			return nil
		}
	case "tab":
		m.complete(1)
		return nil
	case "shift+tab":
		m.complete(-1)
		return nil
	case "up":
		p.browse(-1)
		return nil
	case "down":
		p.browse(1)
		return nil
	}
	p.endCycle()
	if stale && msg.Text != "" {
		// The line that failed is still there to be fixed (backspace,
		// arrows); typing starts a new one, as over a selection.
		p.input.SetValue("")
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	return cmd
}

// complete puts the next (dir 1) or previous candidate in the line: the
// first tab computes them; a single one is taken with a space after it.
func (m *Model) complete(dir int) {
	p := &m.commandPalette
	if p.cur < 0 {
		p.base, p.cands = completePalette(p.input.Value(), m.paletteEnv())
		switch len(p.cands) {
		case 0:
			p.endCycle()
			return
		case 1:
			p.input.SetValue(p.base + p.cands[0] + " ")
			p.input.CursorEnd()
			p.endCycle()
			return
		}
		p.cur = 0
		if dir < 0 {
			p.cur = len(p.cands) - 1
		}
	} else {
		p.cur = (p.cur + dir + len(p.cands)) % len(p.cands)
	}
	p.input.SetValue(p.base + p.cands[p.cur])
	p.input.CursorEnd()
}

// browse walks the history: -1 older, 1 newer; past the newest is the
// line that was being typed.
func (p *cmdPalette) browse(dir int) {
	if len(p.hist) == 0 {
		return
	}
	if p.pos == len(p.hist) {
		p.draft = p.input.Value()
	}
	p.pos = max(0, min(len(p.hist), p.pos+dir))
	line := p.draft
	if p.pos < len(p.hist) {
		line = p.hist[p.pos]
	}
	p.input.SetValue(line)
	p.input.CursorEnd()
	p.endCycle()
}

// remember adds a line to the history, once in a row.
func (p *cmdPalette) remember(line string) {
	if n := len(p.hist); n == 0 || p.hist[n-1] != line {
		p.hist = append(p.hist, line)
	}
	if n := len(p.hist) - maxHistory; n > 0 {
		p.hist = slices.Delete(p.hist, 0, n)
	}
	p.pos = len(p.hist)
}

// runPaletteLine runs the line. A line that does not parse stays in the
// prompt to be fixed, with why in the status line, until a character
// typed starts a new one.
func (m *Model) runPaletteLine() tea.Cmd {
	p := &m.commandPalette
	line := strings.TrimSpace(p.input.Value())
	if line == "" {
		m.closePalette()
		return nil
	}
	p.remember(line)
	call, err := parsePalette(line, m.paletteEnv())
	if err != nil {
		p.endCycle()
		p.stale = true
		return m.setStatus(err.Error(), true)
	}
	m.closePalette()
	return m.runPalette(call)
}

// runPalette does what a parsed line says, through the functions the
// keys use: every change goes through their refusals, preflight and
// confirmation dialogs.
func (m *Model) runPalette(c paletteCall) tea.Cmd {
	if c.action != "" {
		return m.startActionOn(c.hosts, remote.Action{Kind: c.action, Kernel: c.kernel, Mode: c.mode})
	}
	switch c.cmd {
	case "host":
		m.openHost(c.hosts[0])
	case "rollout":
		return m.startRolloutOn(c.hosts, c.kernel, c.mode)
	case "reconnect":
		return m.reconnectOn(c.hosts)
	case "filter":
		if err := m.table.setFilter(c.text); err != nil {
			return m.setStatus(err.Error(), true)
		}
		m.showView(focusTable)
		if !m.table.filter.active() {
			return m.setStatus("filter cleared", false)
		}
		if n := m.table.filter.note; n != "" {
			return m.setStatus(n, false)
		}
	case "group":
		m.showView(focusTable)
		if c.text == "" {
			return m.take(m.table.cycleGrouping())
		}
		return m.take(m.table.groupTableBy(c.text))
	case "follow":
		m.toggleFollow()
	case "wrap":
		m.host.log.wrap = !m.host.log.wrap
		return m.setStatus("wrap "+onOff(m.host.log.wrap), false)
	case "help":
		m.focus.push(focusCommands)
	case "quit":
		return tea.Quit
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// paletteFooter is the footer while the palette is open: the completions
// (the one in the line marked) or the status, then the prompt.
func (m *Model) paletteFooter(w int) string {
	p := &m.commandPalette
	s := m.styles
	var top string
	switch {
	case len(p.cands) > 0:
		top = candidateLine(p.cands, p.cur, w, s)
	case m.status != "":
		top = m.statusText(w)
	default:
		top = s.Dim.Render(clip("tab completes · ↑/↓ history · enter runs · esc closes · :help lists commands", w))
	}
	return top + "\n" + clip(p.input.View(), w)
}

// candidateLine shows the candidates that fit in w around the current
// one, which is bracketed (and styled, with colour).
func candidateLine(cands []string, cur, w int, s Styles) string {
	first := 0
	for {
		used, last := 0, first
		for last < len(cands) && used+width(cands[last])+2 <= w-2 {
			used += width(cands[last]) + 2
			last++
		}
		if cur < last || last == first {
			var b strings.Builder
			if first > 0 {
				b.WriteString("…")
			}
			for i := first; i < last; i++ {
				if i == cur {
					b.WriteString(s.Choice.Render("[" + cands[i] + "]"))
				} else {
					b.WriteString(" " + cands[i] + " ")
				}
			}
			if last < len(cands) {
				b.WriteString("…")
			}
			return clip(b.String(), w)
		}
		first = cur
	}
}

// commandsBox is the palette's commands for :help.
func (m *Model) commandsBox(w, h int) string {
	s := m.styles
	lines := []string{s.DialogTitle.Render("commands · :"), ""}
	uses := make([]string, len(paletteCommands()))
	useW := 0
	for i, c := range paletteCommands() {
		uses[i] = strings.TrimSpace(":" + c.name + " " + c.args)
		useW = max(useW, width(uses[i]))
	}
	for i, c := range paletteCommands() {
		lines = append(lines, pad(uses[i], useW)+"  "+s.Dim.Render(c.help))
	}
	lines = append(lines, "",
		"HOST… is names, a group, marked or all (the hosts the table shows)",
		s.Dim.Render("tab completes · ↑/↓ history · ? or esc to close"))
	return m.box(strings.Join(lines, "\n"), w, h)
}
