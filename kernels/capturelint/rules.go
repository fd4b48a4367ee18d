package capturelint

import (
	"slices"
	"strings"
)

// Confidence says how sure a finding is. The lint sees no types: `.item()`
// on a tensor syncs, on a NumPy array it does not. High findings are call
// shapes that sync (or fail) on any CUDA tensor; low ones depend on what a
// value turns out to be.
type Confidence string

// The confidences.
const (
	High Confidence = "high"
	Low  Confidence = "low"
)

// hit is one capture-illegal call found in a statement.
type hit struct {
	at     Token // the call's name token: its line and column
	rule   string
	call   string // the call's source text
	reason string
	conf   Confidence
}

// keywords are Python's reserved words: never a receiver.
var keywords = map[string]bool{"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true, "def": true, "del": true,
	"elif": true, "else": true, "except": true, "finally": true, "for": true, "from": true, "global": true,
	"if": true, "import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true,
	"or": true, "pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true}

// reductions are tensor methods whose result is a 0-d tensor on the
// device: reading it as a Python value (bool(), int(), if) syncs.
var reductions = map[string]bool{"any": true, "all": true, "max": true, "min": true, "sum": true, "mean": true,
	"amax": true, "amin": true, "argmax": true, "argmin": true, "norm": true, "prod": true, "count_nonzero": true}

// allocators are torch factories whose size argument, given as a 0-d
// tensor, is read on the host.
var allocators = map[string]bool{"empty": true, "zeros": true, "ones": true, "full": true, "arange": true,
	"randn": true, "rand": true, "randint": true, "empty_strided": true}

// primaryStart returns the index where the primary expression ending at
// end starts: names joined by dots, with call and subscript trailers, or
// a bracketed atom.
func primaryStart(toks []Token, end int) int {
	i := end
	for i >= 0 {
		t := toks[i]
		switch {
		case isOp(t, ")") || isOp(t, "]") || isOp(t, "}"):
			o := opener(toks, i)
			if o < 0 {
				return i + 1
			}
			if isOp(t, "}") || o == 0 {
				return o
			}
			p := toks[o-1]
			if p.Kind == Name && !keywords[p.Text] || isOp(p, ")") || isOp(p, "]") || p.Kind == String {
				i = o - 1
				continue
			}
			return o
		case t.Kind == Name && !keywords[t.Text] || t.Kind == String || t.Kind == Number:
			if i >= 2 && isOp(toks[i-1], ".") {
				i -= 2
				continue
			}
			return i
		default:
			return i + 1
		}
	}
	return 0
}

// endsInReduction reports whether toks end in a call of a reduction
// method (`x.max()`, `(a == b).all()`), and returns its name token.
func endsInReduction(toks []Token) (Token, bool) {
	n := len(toks)
	if n < 4 || !isOp(toks[n-1], ")") {
		return Token{}, false
	}
	o := opener(toks, n-1)
	if o < 2 || toks[o-1].Kind != Name || !isOp(toks[o-2], ".") || !reductions[toks[o-1].Text] {
		return Token{}, false
	}
	return toks[o-1], true
}

// isNumpy reports whether a receiver is NumPy's: its calls run on the host
// and sync nothing.
func isNumpy(recv []Token) bool {
	return len(recv) > 0 && (isName(recv[0], "np") || isName(recv[0], "numpy"))
}

// hostNamed reports whether a receiver names a host tensor by the common
// convention: a name ending in _cpu or _np (seq_lens_cpu), or starting
// with cpu_. The lint sees no types; a name is a hint, so such findings
// are low.
func hostNamed(recv []Token) bool {
	return slices.ContainsFunc(recv, func(t Token) bool {
		return t.Kind == Name && (strings.HasSuffix(t.Text, "_cpu") || strings.HasSuffix(t.Text, "_np") || strings.HasPrefix(t.Text, "cpu_"))
	})
}

// argText is an argument's text with its spaces removed.
func argText(src string, toks []Token) string {
	return strings.Join(strings.Fields(text(src, toks)), "")
}

func isCPUDevice(s string) bool {
	switch s {
	case `"cpu"`, `'cpu'`, `torch.device("cpu")`, `torch.device('cpu')`:
		return true
	}
	return false
}

// calls finds the capture-illegal calls in one statement's tokens, and in
// the replacement fields of its f-strings.
func calls(src string, toks []Token) []hit {
	var out []hit
	for i, t := range toks {
		if t.Kind == String && len(t.Inner) > 0 {
			out = append(out, calls(src, t.Inner)...)
		}
		if t.Kind != Name || i+1 >= len(toks) || !isOp(toks[i+1], "(") {
			continue
		}
		end := closer(toks, i+1)
		args := toks[i+2 : min(end, len(toks))]
		whole := toks[i:min(end+1, len(toks))]
		if i >= 1 && isOp(toks[i-1], ".") {
			start := primaryStart(toks, i-2)
			recv := toks[start : i-1]
			if h, ok := method(src, t, recv, args); ok {
				h.at, h.call = t, text(src, toks[start:min(end+1, len(toks))])
				out = append(out, h)
			}
			continue
		}
		if i >= 1 && (isName(toks[i-1], "def") || isName(toks[i-1], "class")) {
			continue
		}
		if h, ok := plain(t, args); ok {
			h.at, h.call = t, text(src, whole)
			out = append(out, h)
		}
	}
	return out
}

// method judges a call of method name on receiver recv.
func method(src string, name Token, recv, args []Token) (hit, bool) {
	r := text(src, recv)
	argv := splitTop(args, func(t Token) bool { return isOp(t, ",") })
	hasKw := func(kw string) bool {
		return slices.ContainsFunc(argv, func(a []Token) bool { return len(a) > 1 && isName(a[0], kw) && isOp(a[1], "=") })
	}
	sync := func(rule, reason string, c Confidence) (hit, bool) {
		return hit{rule: rule, reason: reason, conf: c}, true
	}
	switch name.Text {
	case "item", "tolist":
		if isNumpy(recv) || strings.HasSuffix(r, ".cpu()") { // the .cpu() is the finding
			break
		}
		if hostNamed(recv) {
			return sync(name.Text, "."+name.Text+"() on what its name says is a host tensor: no device sync if so; a host sync, illegal during CUDA graph capture, if it is on the device", Low)
		}
		return sync(name.Text, "."+name.Text+"() copies a device tensor's value to the host and waits for it: a host sync, illegal during CUDA graph capture", High)
	case "cpu":
		if isNumpy(recv) || r == "torch" {
			break
		}
		return sync("cpu", ".cpu() copies a device tensor to host memory and waits for it: a host sync, illegal during CUDA graph capture", High)
	case "numpy":
		if strings.Contains(r, ".cpu()") { // the .cpu() is the finding
			break
		}
		if hostNamed(recv) {
			return sync("numpy", ".numpy() on what its name says is a host tensor: free if so; on a device tensor it fails", Low)
		}
		return sync("numpy", ".numpy() needs the tensor in host memory: on a device tensor it fails, after a copy it synced", High)
	case "to":
		cpu := len(argv) > 0 && isCPUDevice(argText(src, argv[0]))
		for _, a := range argv {
			if s := argText(src, a); strings.HasPrefix(s, "device=") && isCPUDevice(strings.TrimPrefix(s, "device=")) {
				cpu = true
			}
		}
		if !cpu {
			break
		}
		for _, a := range argv {
			if argText(src, a) == "non_blocking=True" {
				return sync("to-cpu", `.to("cpu", non_blocking=True) does not wait, but the host copy is filled once, at capture: replays never refresh it`, Low)
			}
		}
		return sync("to-cpu", `.to("cpu") copies to pageable host memory and waits for it: a host sync, illegal during CUDA graph capture`, High)
	case "synchronize":
		if r == "torch.cuda" || r == "cuda" {
			return sync("synchronize", "torch.cuda.synchronize() waits for the device from the host: illegal during CUDA graph capture", High)
		}
		return sync("synchronize", ".synchronize() on a stream or event waits on the host: illegal during CUDA graph capture", High)
	case "nonzero", "argwhere":
		if isNumpy(recv) {
			break
		}
		return sync(name.Text, name.Text+"() has a data-dependent output size: it syncs to learn it, illegal during CUDA graph capture", High)
	case "unique", "unique_consecutive":
		if isNumpy(recv) {
			break
		}
		return sync("unique", name.Text+"() has a data-dependent output size: it syncs to learn it, illegal during CUDA graph capture", High)
	case "masked_select":
		return sync("masked_select", "masked_select() has a data-dependent output size: it syncs to learn it, illegal during CUDA graph capture", High)
	case "where":
		if r == "torch" && len(argv) == 1 && len(argv[0]) > 0 {
			return sync("nonzero", "torch.where(cond) with one argument is nonzero(as_tuple=True): a data-dependent size, it syncs", High)
		}
	case "repeat_interleave":
		if isNumpy(recv) || hasKw("output_size") {
			break
		}
		return sync("repeat_interleave", "repeat_interleave() with tensor repeats and no output_size= syncs to learn its size", Low)
	case "current_seed", "initial_seed", "seed", "get_rng_state":
		if r == "torch.cuda" || r == "cuda" {
			return sync("cuda-rng", "torch.cuda."+name.Text+"() reads the CUDA generator's state on the host: PyTorch refuses it during CUDA graph capture", High)
		}
	case "equal", "allclose", "assert_close", "assert_allclose":
		if r == "torch" || r == "torch.testing" {
			return sync("compare-on-host", r+"."+name.Text+"() returns its verdict to Python: a host sync, illegal during CUDA graph capture", High)
		}
	default:
		if r == "torch" && allocators[name.Text] && slices.ContainsFunc(argv, func(a []Token) bool { _, ok := endsInReduction(a); return ok }) {
			return sync("data-dependent-alloc", "torch."+name.Text+"() sized by a device tensor reads the size on the host: a sync, and a shape capture cannot fix", Low)
		}
	}
	return hit{}, false
}

// plain judges a call of a builtin by name.
func plain(name Token, args []Token) (hit, bool) {
	switch name.Text {
	case "bool", "int", "float":
		if _, ok := endsInReduction(args); ok {
			return hit{rule: "host-read", reason: name.Text + "() of a device tensor reads its value on the host: a sync, illegal during CUDA graph capture", conf: Low}, true
		}
	}
	return hit{}, false
}

// truthTests finds conditions (if, elif, while, assert) that take the
// truth value of a tensor reduction: `if mask.any():` syncs.
func truthTests(src string, toks []Token) []hit {
	var out []hit
	for _, part := range splitTop(toks, func(t Token) bool { return isName(t, "and") || isName(t, "or") }) {
		for len(part) > 0 && isName(part[0], "not") {
			part = part[1:]
		}
		for _, operand := range splitTop(part, isComparison) {
			if at, ok := endsInReduction(operand); ok {
				out = append(out, hit{at: at, rule: "host-read", call: text(src, part), conf: Low,
					reason: "the truth value of a device tensor is read on the host: a sync, illegal during CUDA graph capture"})
				break
			}
		}
	}
	return out
}

func isComparison(t Token) bool {
	switch t.Text {
	case "<", ">", "==", "!=", "<=", ">=":
		return t.Kind == Op
	}
	return false
}
