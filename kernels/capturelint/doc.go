// Package capturelint finds, in a kernel's Python source, the host syncs
// and other calls that CUDA graph capture forbids (.item(), .cpu(),
// torch.cuda.synchronize(), nonzero, unique, ...), and says which of the
// kernel's modes reach each one: the branch it sits under
// (`if os.environ.get("KDTREE_MODE") == "validate":`, `if MODE in (...)`
// where MODE was read from the variable, a dict that maps modes to
// functions), the module imports that load it (sitecustomize.py imports
// the kernel only when the mode is not off), and the places a function is
// named from. Shapes it cannot resolve count as every mode: the lint
// over-approximates reach, it never hides a finding.
//
// It reads Python with its own tokenizer, written to Python's tokenize
// rules (every string prefix and quote, triple-quoted strings across
// lines, f-strings with their replacement fields, comments, backslash
// continuations, brackets that join lines, INDENT and DEDENT), and a light
// structural parser over the tokens (def, class and if/elif/else blocks
// with their conditions, calls with their receivers), so a word in a
// comment or a string never matches. Why not tree-sitter's Python grammar,
// the obvious full parser: its Go bindings are cgo, and the release binary
// is static (CGO_ENABLED=0, one file copied to a jump host); and the lint
// needs only tokens, blocks and call shapes, not a full syntax tree. Why
// not Python's own ast module: bringup runs where no Python is (a laptop),
// before the kernel reaches a host.
//
// Lint is pure: it is handed file contents and returns findings. ReadTree
// reads a tree through the fs.FS it is handed; printing is the caller's.
package capturelint
