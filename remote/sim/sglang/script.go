// Package sglang generates the startup log of an SGLang server as a
// timeline of lines in the real current-main format
// ("[2026-11-30 10:00:00 TP0] Load weight begin. avail mem=139.29 GB"),
// including its failure texts. The simulated hosts (remote/sim) and the
// stand-in server (cmd/infersim) both play these scripts, so the console
// is tested against one faithful source of log text.
//
// The exact strings follow SGLang's own sources (the logger's format in
// srt/utils, "Load weight begin/end" and the capture lines in
// model_runner.py and the CUDA graph runners, the failure texts of the
// scheduler and the capture wrapper) and the CUDA texts captured on a
// real GPU (remote/startup/testdata).
package sglang

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TimeLayout is SGLang's logger datefmt ("%Y-%m-%d %H:%M:%S").
const TimeLayout = "2006-01-02 15:04:05"

// Never marks a moment a script does not reach (no ready line, no exit).
const Never time.Duration = -1

// Failure names a scripted way for a startup to go wrong.
type Failure string

// The failure scenarios. FailCapture is also chosen on its own when the
// kernel mode is not capture-safe and CUDA graphs are enabled.
const (
	FailNone      Failure = ""
	FailCapture   Failure = "capture"   // .item() inside graph capture: the real traceback, exit 1
	FailOOM       Failure = "oom"       // CUDA out of memory during weight load, exit 1
	FailPort      Failure = "port"      // the HTTP port is taken; uvicorn fails to bind at the end, exit 1
	FailNCCL      Failure = "nccl"      // a collective hangs in capture until the NCCL watchdog aborts
	FailHang      Failure = "hang"      // capture begins and nothing follows; the process stays up
	FailCrashLoop Failure = "crashloop" // NCCL init error seconds after start, every start
	// FailPeerLost is a node of a multi-node deployment whose peer died
	// in init: its ranks wait on the rendezvous store until the socket
	// times out (PeerWait), c10d's lines, exit 1.
	FailPeerLost Failure = "peer-lost"
)

// KnownFailures lists the failure scenarios ParseFailure accepts.
func KnownFailures() []Failure {
	return []Failure{FailCapture, FailOOM, FailPort, FailNCCL, FailHang, FailCrashLoop, FailPeerLost}
}

// ParseFailure reads a failure name; "" and "none" mean no failure.
func ParseFailure(s string) (Failure, error) {
	if s == "" || s == "none" {
		return FailNone, nil
	}
	var names []string
	for _, f := range KnownFailures() {
		if string(f) == s {
			return f, nil
		}
		names = append(names, string(f))
	}
	return FailNone, fmt.Errorf("unknown failure %q (known: %s)", s, strings.Join(names, ", "))
}

// Kernel describes the injected kernel extension whose load the script
// reports. A zero Name means no extension line.
type Kernel struct {
	Name        string // e.g. kdtree-verify
	Mode        string // the mode read from the environment, e.g. validate
	CaptureSafe bool   // false: the mode syncs with the host and fails graph capture
	Path        string // the PYTHONPATH entry it was loaded from, e.g. /opt/kdtree/site
	Hash        string // sha256 of the directory's content, hex
}

// Params shape one startup. Zero fields take the defaults of Defaults.
type Params struct {
	ModelPath  string
	ModelClass string // e.g. DeepseekV3ForCausalLM
	Host       string // the address uvicorn binds, 0.0.0.0 by default
	Port       int
	TP         int
	Shards     int
	PID        int   // the main process id uvicorn reports
	Seed       int64 // jitter of shard times and client ports; equal seeds give equal scripts

	// Phase lengths: process start to server_args (Boot), server_args to
	// distributed init end (Init), weight load, KV pool, graph capture,
	// engine built to uvicorn listening (HTTP), listening to ready (Warmup).
	Boot, Init, Weights, KV, Capture, HTTP, Warmup time.Duration
	// NCCLTimeout is how long the hung collective of FailNCCL waits.
	NCCLTimeout time.Duration

	// NNodes, NodeRank and DistInitAddr place the server in a multi-node
	// deployment (SGLang's --nnodes, --node-rank, --dist-init-addr);
	// NNodes 0 or 1 is a server of its own.
	NNodes       int
	NodeRank     int
	DistInitAddr string
	// PeerWait is how long FailPeerLost's ranks wait on the store after
	// distributed init begins (0: 20 s).
	PeerWait time.Duration

	DisableCUDAGraph bool
	Kernel           Kernel
	Failure          Failure
	// Rates is the decode rate each kernel mode gives once serving (nil:
	// DefaultRates).
	Rates Rates
}

// Defaults returns the parameters of a DeepSeek-V3 start on eight H200s
// that serves after about eleven minutes.
func Defaults() Params {
	return Params{
		ModelPath:   "/models/DeepSeek-V3",
		ModelClass:  "DeepseekV3ForCausalLM",
		Host:        "0.0.0.0",
		Port:        30000,
		TP:          8,
		Shards:      65,
		PID:         4242,
		Boot:        9 * time.Second,
		Init:        40 * time.Second,
		Weights:     8*time.Minute + 30*time.Second,
		KV:          26 * time.Second,
		Capture:     80 * time.Second,
		HTTP:        4 * time.Second,
		Warmup:      6 * time.Second,
		NCCLTimeout: 10 * time.Minute,
	}
}

// withDefaults fills the zero fields of p from Defaults.
func (p Params) withDefaults() Params {
	d := Defaults()
	str := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	num := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	dur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	str(&p.ModelPath, d.ModelPath)
	str(&p.ModelClass, d.ModelClass)
	str(&p.Host, d.Host)
	num(&p.Port, d.Port)
	num(&p.TP, d.TP)
	num(&p.Shards, d.Shards)
	num(&p.PID, d.PID)
	dur(&p.Boot, d.Boot)
	dur(&p.Init, d.Init)
	dur(&p.Weights, d.Weights)
	dur(&p.KV, d.KV)
	dur(&p.Capture, d.Capture)
	dur(&p.HTTP, d.HTTP)
	dur(&p.Warmup, d.Warmup)
	dur(&p.NCCLTimeout, d.NCCLTimeout)
	dur(&p.PeerWait, 20*time.Second)
	if p.Rates == nil {
		p.Rates = DefaultRates()
	}
	return p
}

// Prefix says how a line is introduced when it is written.
type Prefix int

// The prefixes.
const (
	PrefixLogger   Prefix = iota // SGLang's "[2006-01-02 15:04:05 TP0] "
	PrefixNone                   // tqdm bars, traceback continuation lines, std::terminate
	PrefixGlog                   // c10's "[rank3]:[E1130 10:22:01.123456789 "
	PrefixGlogWarn               // c10's warning "[rank1]:[W1130 10:22:01.123456789 ", Tag the rank number
)

// Line is one line of the script, due At after the process started.
type Line struct {
	At     time.Duration
	Prefix Prefix
	Tag    string // the rank tags, " TP0"; empty for the main process
	// Bar marks a tqdm refresh, which tqdm starts with "\r".
	Bar bool
	// Partial marks a refresh that does not end its line: a normal tqdm
	// bar refreshes in place with "\r" and writes "\n" only when it closes,
	// so journald never sees a partial refresh as a record of its own.
	Partial bool
	Text    string
}

// Render returns the line as the process writes it at t, without the
// carriage return of a bar or the newline.
func (l Line) Render(t time.Time) string {
	switch l.Prefix {
	case PrefixLogger:
		return "[" + t.Format(TimeLayout) + l.Tag + "] " + l.Text
	case PrefixGlog:
		return "[rank3]:[E" + t.Format("0102 15:04:05.000000000") + " " + l.Text
	case PrefixGlogWarn:
		// c10 writes the month unpadded: "[W623 15:37:01.823833318".
		return "[rank" + l.Tag + "]:[W" + t.Format("102 15:04:05.000000000") + " " + l.Text
	case PrefixNone:
	}
	return l.Text
}

// Marks are the offsets at which a script reaches its milestones, Never
// when it does not.
type Marks struct {
	InitBegin, InitEnd       time.Duration
	WeightsBegin, WeightsEnd time.Duration
	KVAllocated, KVEnd       time.Duration
	CaptureBegin, CaptureEnd time.Duration
	Listening, Ready         time.Duration
}

// Script is one startup's timeline.
type Script struct {
	Params Params
	Lines  []Line // in order of At
	Marks  Marks
	// Exit is when the process exits on its own, Never if it keeps running
	// (serving, or hung); ExitCode is its status then.
	Exit     time.Duration
	ExitCode int
	// Died is when the ranks died (their exception, the watchdog's
	// abort), before the main process exits; Never if they do not. A
	// peer node loses its links to them then.
	Died time.Duration
	// shardAt[i] is when shard i+1 finished loading.
	shardAt []time.Duration
	// weightsGiB is what the loaded weights take per GPU when all shards are in.
	weightsGiB float64
}

// Memory levels of the script in GiB per GPU as SGLang reports them, for
// an H200 that torch sees as 139.80 GiB.
const (
	totalGiB        = 139.80
	availAtLoad     = 139.29
	weightsUsage    = 81.17
	availAfterPool  = 14.20
	availAtCapture  = 14.10
	availAfterGraph = 13.61
	kvTokens        = 1226984
	kvHalfGiB       = 20.95
	oomUsedGiB      = 138.77
)

// ContextLen is the model's context length, which both engines report
// (SGLang's context_len, vLLM's max model len).
const ContextLen = 163840

// captureBatchSizes are the decode batch sizes SGLang captures by default
// for cuda_graph_max_bs=160.
func captureBatchSizes() []int {
	bs := []int{1, 2, 4}
	for b := 8; b <= 160; b += 8 {
		bs = append(bs, b)
	}
	return bs
}

// builder accumulates the lines of a script.
type builder struct {
	p     Params
	lines []Line
}

func (b *builder) add(at time.Duration, pre Prefix, tag, text string) {
	b.lines = append(b.lines, Line{At: at, Prefix: pre, Tag: tag, Text: text})
}

// tag is the rank tag of rank r: current SGLang adds " TPn" only when the
// TP size is above one.
func (b *builder) tag(r int) string {
	if b.p.TP > 1 {
		return fmt.Sprintf(" TP%d", r)
	}
	return ""
}

func (b *builder) rank0(at time.Duration, text string) { b.add(at, PrefixLogger, b.tag(0), text) }
func (b *builder) main(at time.Duration, text string)  { b.add(at, PrefixLogger, "", text) }

// allRanks logs text from every rank, a few milliseconds apart.
func (b *builder) allRanks(at time.Duration, text string) {
	for r := 0; r < b.p.TP; r++ {
		b.add(at+time.Duration(r)*2*time.Millisecond, PrefixLogger, b.tag(r), text)
	}
}

// bare adds lines without prefix, one a millisecond apart so the order holds.
func (b *builder) bare(at time.Duration, lines ...string) time.Duration {
	for i, l := range lines {
		b.add(at+time.Duration(i)*time.Millisecond, PrefixNone, "", l)
	}
	return at + time.Duration(len(lines))*time.Millisecond
}

// peerLost ends a node whose peer never came to the rendezvous: each of
// its ranks' store sockets times out at at (c10d's two lines), and the
// process exits with status 1.
func (s *Script) peerLost(b *builder, at time.Duration) {
	p := s.Params
	host, port := storeAddr(p.DistInitAddr)
	end := at
	s.Died = at
	for r := 0; r < p.TP; r++ {
		rank := fmt.Sprint(p.NodeRank*p.TP + r)
		local := 43500 + 10*r
		l := at + time.Duration(r)*time.Millisecond
		for i, text := range storeTimeout(host, port, local, int(p.PeerWait/time.Millisecond)) {
			b.add(l+time.Duration(i)*300*time.Microsecond, PrefixGlogWarn, rank, text)
		}
		end = l
	}
	b.main(end+300*time.Millisecond, "Received sigquit from a child process. It usually means the child failed.")
	s.Exit = end + 800*time.Millisecond
	s.ExitCode = 1
}

// PeerLost is what a node of a multi-node deployment writes once a peer
// is gone, from the moment it starts waiting for it: in distributed
// init (init true) its ranks' store sockets time out after PeerWait
// (c10d's lines of sglang issue 7478); past it, a collective the peer
// never joins times out and the NCCL watchdog takes the process down
// after PeerWait (its lines, as sglang issue 3368 shows them). The lines'
// At count from the start of the wait; the process exits at exit with
// status 1.
func PeerLost(p Params, init bool) (lines []Line, exit time.Duration) {
	p = p.withDefaults()
	s := &Script{Params: p}
	b := &builder{p: p}
	if init {
		s.peerLost(b, p.PeerWait)
		return b.lines, s.Exit
	}
	at := p.PeerWait
	glog, bare := ncclWatchdog(int(p.PeerWait / time.Millisecond))
	for i, l := range glog {
		b.add(at+time.Duration(i)*time.Millisecond, PrefixGlog, "", l)
	}
	end := b.bare(at+5*time.Millisecond, bare...)
	b.main(end+200*time.Millisecond, fmt.Sprintf("Child process unexpectedly failed with an exit code 134. pid=%d", p.PID+4))
	return b.lines, end + 700*time.Millisecond
}

// storeAddr splits a --dist-init-addr; the store listens on its port.
func storeAddr(addr string) (string, int) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return addr, 20000
	}
	port, err := strconv.Atoi(addr[i+1:])
	if err != nil {
		return addr[:i], 20000
	}
	return strings.Trim(addr[:i], "[]"), port
}

// die logs a scheduler exception with its traceback, the main process's
// sigquit line, and exits with status 1.
func (s *Script) die(b *builder, at time.Duration, tb []string) {
	s.Died = at
	b.rank0(at, "Scheduler hit an exception: "+tb[0])
	end := b.bare(at+time.Millisecond, tb[1:]...)
	b.main(end+300*time.Millisecond, "Received sigquit from a child process. It usually means the child failed.")
	s.Exit = end + 800*time.Millisecond
	s.ExitCode = 1
}

// New builds the script for p.
func New(p Params) *Script {
	p = p.withDefaults()
	if p.Failure == FailNone && !p.DisableCUDAGraph && p.Kernel.Name != "" && !p.Kernel.CaptureSafe {
		p.Failure = FailCapture
	}
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x5e1a))
	s := &Script{Params: p, Exit: Never, Died: Never, weightsGiB: weightsUsage}
	s.Marks = Marks{Never, Never, Never, Never, Never, Never, Never, Never, Never, Never}
	b := &builder{p: p}
	defer func() {
		// Ranks log a few milliseconds apart, so the builder's order is
		// not quite time order.
		sort.SliceStable(b.lines, func(i, j int) bool { return b.lines[i].At < b.lines[j].At })
		s.Lines = b.lines
	}()

	if p.Kernel.Name != "" {
		b.main(p.Boot/3, fmt.Sprintf("%s: sitecustomize loaded from %s, mode=%s, content sha256=%s", p.Kernel.Name, p.Kernel.Path, p.Kernel.Mode, p.Kernel.Hash))
	}
	b.main(p.Boot, serverArgs(p))

	t := p.Boot + p.Init*2/5
	s.Marks.InitBegin = t
	b.rank0(t, "Init torch distributed begin.")
	if p.Failure == FailCrashLoop {
		s.die(b, p.Boot+p.Init/2, ncclInitTraceback())
		return s
	}
	if p.Failure == FailPeerLost {
		s.peerLost(b, t+p.PeerWait)
		return s
	}
	t = p.Boot + p.Init
	s.Marks.InitEnd = t
	b.rank0(t, fmt.Sprintf("Init torch distributed ends. elapsed=%.2f s, mem usage=2.50 GB", (p.Init*3/5).Seconds()))

	t += 500 * time.Millisecond
	s.Marks.WeightsBegin = t
	b.allRanks(t, fmt.Sprintf("Load weight begin. avail mem=%.2f GB", availAtLoad))
	if !s.loadShards(b, rng, t) {
		return s
	}
	t += p.Weights
	s.Marks.WeightsEnd = t
	b.allRanks(t, fmt.Sprintf("Load weight end. elapsed=%.2f s, type=%s, dtype=torch.bfloat16, avail mem=%.2f GB, mem usage=%.2f GB.",
		p.Weights.Seconds(), p.ModelClass, availAtLoad-weightsUsage, weightsUsage))

	s.Marks.KVAllocated = t + p.KV*7/10
	b.rank0(s.Marks.KVAllocated, fmt.Sprintf("KV Cache is allocated. #tokens: %d, K size: %.2f GB, V size: %.2f GB", kvTokens, kvHalfGiB, kvHalfGiB))
	t += p.KV
	s.Marks.KVEnd = t
	b.rank0(t, fmt.Sprintf("Memory pool end. avail mem=%.2f GB", availAfterPool))

	var captured time.Duration
	if !p.DisableCUDAGraph {
		t += 100 * time.Millisecond
		s.Marks.CaptureBegin = t
		bs := captureBatchSizes()
		b.rank0(t, fmt.Sprintf("Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=%s, avail mem=%.2f GB", pyList(bs), availAtCapture))
		switch p.Failure {
		case FailCapture:
			s.die(b, t+1200*time.Millisecond, captureTraceback(p))
			return s
		case FailHang:
			return s
		case FailNCCL:
			at := t + p.NCCLTimeout
			glog, bare := ncclWatchdog(int(p.NCCLTimeout / time.Millisecond))
			s.Died = at
			for i, l := range glog {
				b.add(at+time.Duration(i)*time.Millisecond, PrefixGlog, "", l)
			}
			end := b.bare(at+5*time.Millisecond, bare...)
			b.main(end+200*time.Millisecond, fmt.Sprintf("Child process unexpectedly failed with an exit code 134. pid=%d", p.PID+4))
			s.Exit = end + 700*time.Millisecond
			s.ExitCode = 1
			return s
		case FailNone, FailOOM, FailPort, FailCrashLoop: // capture succeeds
		case FailPeerLost: // failed in init, before this
		}
		s.captureBar(b, t, bs)
		t += p.Capture
		captured = p.Capture
		s.Marks.CaptureEnd = t
		b.rank0(t, fmt.Sprintf("Capture target decode CUDA graph end. elapsed=%.2f s, mem usage=%.2f GB, avail mem=%.2f GB.",
			p.Capture.Seconds(), availAtCapture-availAfterGraph, availAfterGraph))
	}
	avail := availAfterGraph
	if p.DisableCUDAGraph {
		avail = availAfterPool
	}
	t += 200 * time.Millisecond
	b.rank0(t, fmt.Sprintf("max_total_num_tokens=%d, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=%d, available_gpu_mem=%.2f GB", kvTokens, ContextLen, avail))
	t += 300 * time.Millisecond
	b.main(t, fmt.Sprintf("Engine startup timings (s): load_weight=%.2f, kv_cache_allocation=%.2f, scheduler_e2e=%.2f, cuda_graph={prefill=0.00, decode=%.2f, target_verify=0.00, draft_prefill=0.00, draft_decode=0.00, draft_extend=0.00}, tokenizer_e2e=%.2f",
		p.Weights.Seconds(), p.KV.Seconds(), (t-p.Boot).Seconds(), captured.Seconds(), (t-p.Boot+2*time.Second).Seconds()))

	listen := t + p.HTTP
	b.main(listen-300*time.Millisecond, fmt.Sprintf("INFO:     Started server process [%d]", p.PID))
	b.main(listen-200*time.Millisecond, "INFO:     Waiting for application startup.")
	b.main(listen-100*time.Millisecond, "INFO:     Application startup complete.")
	if p.Failure == FailPort {
		b.main(listen, fmt.Sprintf("ERROR:    [Errno 98] error while attempting to bind on address ('%s', %d): address already in use", p.Host, p.Port))
		b.main(listen+100*time.Millisecond, "INFO:     Waiting for application shutdown.")
		b.main(listen+200*time.Millisecond, "INFO:     Application shutdown complete.")
		s.Exit = listen + 600*time.Millisecond
		s.ExitCode = 1
		return s
	}
	s.Marks.Listening = listen
	b.main(listen, fmt.Sprintf("INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)", p.Host, p.Port))
	client := 32768 + rng.IntN(28000)
	b.main(listen+time.Second, fmt.Sprintf("INFO:     127.0.0.1:%d - \"GET /model_info HTTP/1.1\" 200 OK", client))
	ready := listen + p.Warmup
	if ready < listen+time.Second+200*time.Millisecond {
		ready = listen + time.Second + 200*time.Millisecond
	}
	b.main(ready-100*time.Millisecond, fmt.Sprintf("INFO:     127.0.0.1:%d - \"POST /generate HTTP/1.1\" 200 OK", client+2))
	s.Marks.Ready = ready
	b.main(ready, "The server is fired up and ready to roll!")
	return s
}

// loadShards adds the shard bar lines from start, and for FailOOM the
// failure part-way through; it reports whether the load completes.
func (s *Script) loadShards(b *builder, rng *rand.Rand, start time.Duration) bool {
	p := s.Params
	// Shard times vary ±35 % around the mean and are scaled to sum to Weights.
	w := make([]float64, p.Shards)
	var sum float64
	for i := range w {
		w[i] = 0.65 + 0.7*rng.Float64()
		sum += w[i]
	}
	s.shardAt = make([]time.Duration, p.Shards)
	var acc float64
	for i := range w {
		acc += w[i]
		s.shardAt[i] = time.Duration(float64(p.Weights) * acc / sum)
	}
	// The bar closes just before "Load weight end".
	end := p.Weights - p.Weights/200
	s.shardAt[p.Shards-1] = end
	b.bare(start+time.Duration(p.TP)*2*time.Millisecond, ShardLine(0, p.Shards, 0))
	b.lines[len(b.lines)-1].Bar = true
	failAt := p.Shards
	if p.Failure == FailOOM {
		failAt = p.Shards * 3 / 5
		s.weightsGiB = (oomUsedGiB - (totalGiB - availAtLoad)) * float64(p.Shards) / float64(failAt)
	}
	for i := 0; i < failAt; i++ {
		at := s.shardAt[i]
		b.bare(start+at, ShardLine(i+1, p.Shards, at))
		b.lines[len(b.lines)-1].Bar = true
	}
	if failAt < p.Shards {
		s.die(b, start+s.shardAt[failAt-1]+(s.shardAt[failAt]-s.shardAt[failAt-1])/2, oomTraceback(p))
		return false
	}
	// tqdm prints the closing 100 % line a second time when the bar closes.
	b.bare(start+end+time.Millisecond, ShardLine(p.Shards, p.Shards, end))
	b.lines[len(b.lines)-1].Bar = true
	return true
}

// captureBar adds the capture bar's refreshes from begin: partial ones as
// each batch size is captured (largest first, as SGLang does), and the
// closing line a real journal sees.
func (s *Script) captureBar(b *builder, begin time.Duration, bs []int) {
	p := s.Params
	n := len(bs)
	for i := 0; i <= n; i++ {
		size := bs[max(n-1-i, 0)]
		availGB := availAtCapture - (availAtCapture-availAfterGraph)*float64(i)/float64(n)
		// Refreshes spread over the capture, leaving room for the closing
		// line before the end line even when the capture is short.
		elapsed := max(p.Capture-100*time.Millisecond, 0) * time.Duration(i) / time.Duration(n)
		at := begin + 10*time.Millisecond + elapsed
		if i == n {
			at = begin + p.Capture - 50*time.Millisecond
			elapsed = at - begin
		}
		b.lines = append(b.lines, Line{At: at, Prefix: PrefixNone, Bar: true, Partial: i < n,
			Text: CaptureBarLine(size, availGB, i, n, elapsed)})
	}
}

// Ready reports whether the script reaches the ready line.
func (s *Script) Ready() bool { return s.Marks.Ready != Never }

// Due returns the lines due in (from, to], in order.
func (s *Script) Due(from, to time.Duration) []Line {
	var out []Line
	for _, l := range s.Lines {
		if l.At > from && l.At <= to {
			out = append(out, l)
		}
	}
	return out
}

// Next returns the offset of the first line after from, or Never.
func (s *Script) Next(from time.Duration) time.Duration {
	for _, l := range s.Lines {
		if l.At > from {
			return l.At
		}
	}
	return Never
}

// pyList renders a list of ints as Python's repr does.
func pyList(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// serverArgs renders the one long server_args line (often over 4 KB in
// real logs, which is why journalctl needs --all).
// distInitArg is server_args' dist_init_addr field.
func distInitArg(addr string) string {
	if addr == "" {
		return "dist_init_addr=None"
	}
	return fmt.Sprintf("dist_init_addr='%s'", addr)
}

func serverArgs(p Params) string {
	pyBool := func(v bool) string {
		if v {
			return "True"
		}
		return "False"
	}
	fields := []string{
		fmt.Sprintf("model_path='%s'", p.ModelPath), fmt.Sprintf("tokenizer_path='%s'", p.ModelPath),
		"tokenizer_mode='auto'", "tokenizer_worker_num=1", "skip_tokenizer_init=False", "load_format='auto'",
		"model_loader_extra_config='{}'", "trust_remote_code=True", "context_length=None", "is_embedding=False",
		"enable_multimodal=None", "revision=None", "model_impl='auto'", fmt.Sprintf("host='%s'", p.Host), fmt.Sprintf("port=%d", p.Port),
		"skip_server_warmup=False", "warmups=None", "nccl_port=None", "dtype='auto'", "quantization=None",
		"quantization_param_path=None", "kv_cache_dtype='auto'", "enable_fp32_lm_head=False", "mem_fraction_static=0.9",
		"max_running_requests=None", "max_queued_requests=None", "max_total_tokens=None", "chunked_prefill_size=8192",
		"max_prefill_tokens=16384", "schedule_policy='fcfs'", "schedule_conservativeness=1.0", "page_size=1",
		"hybrid_kvcache_ratio=None", "swa_full_tokens_ratio=0.8", "disable_hybrid_swa_memory=False", "device='cuda'",
		fmt.Sprintf("tp_size=%d", p.TP), "pp_size=1", "pp_max_micro_batch_size=None", "stream_interval=1",
		"stream_output=False", "random_seed=893421757", "constrained_json_whitespace_pattern=None", "watchdog_timeout=300",
		"dist_timeout=None", "download_dir=None", "base_gpu_id=0", "gpu_id_step=1", "sleep_on_idle=False",
		"log_level='info'", "log_level_http=None", "log_requests=False", "log_requests_level=2", "crash_dump_folder=None",
		"show_time_cost=False", "enable_metrics=False", "enable_metrics_for_all_schedulers=False", "bucket_time_to_first_token=None",
		"bucket_inter_token_latency=None", "bucket_e2e_request_latency=None", "collect_tokens_histogram=False",
		"decode_log_interval=40", "enable_request_time_stats_logging=False", "kv_events_config=None", "api_key=None",
		fmt.Sprintf("served_model_name='%s'", p.ModelPath), "weight_version='default'", "chat_template=None",
		"completion_template=None", "file_storage_path='sglang_storage'", "enable_cache_report=False", "reasoning_parser=None",
		"tool_call_parser=None", "tool_server=None", "dp_size=1", "load_balance_method='round_robin'",
		distInitArg(p.DistInitAddr), fmt.Sprintf("nnodes=%d", max(p.NNodes, 1)), fmt.Sprintf("node_rank=%d", p.NodeRank), "json_model_override_args='{}'", "preferred_sampling_params=None",
		"enable_lora=None", "max_lora_rank=None", "lora_target_modules=None", "lora_paths=None", "max_loaded_loras=None",
		"max_loras_per_batch=8", "lora_backend='triton'", "attention_backend='fa3'", "decode_attention_backend=None",
		"prefill_attention_backend=None", "sampling_backend='flashinfer'", "grammar_backend='xgrammar'",
		"mm_attention_backend=None", "speculative_algorithm=None", "speculative_draft_model_path=None",
		"speculative_num_steps=None", "speculative_eagle_topk=None", "speculative_num_draft_tokens=None",
		"ep_size=1", "moe_a2a_backend='none'", "moe_runner_backend='auto'", "flashinfer_mxfp4_moe_precision='default'",
		"enable_flashinfer_allreduce_fusion=False", "deepep_mode='auto'", "ep_num_redundant_experts=0",
		"ep_dispatch_algorithm='static'", "init_expert_location='trivial'", "enable_eplb=False", "eplb_algorithm='auto'",
		"enable_hierarchical_cache=False", "hicache_ratio=2.0", "hicache_size=0", "hicache_write_policy='write_through'",
		"hicache_io_backend='kernel'", "hicache_mem_layout='layer_first'", "hicache_storage_backend=None",
		"enable_double_sparsity=False", "cpu_offload_gb=0", "offload_group_size=-1", "offload_num_in_group=1",
		"disable_radix_cache=False", "cuda_graph_max_bs=160", "cuda_graph_bs=None",
		"disable_cuda_graph=" + pyBool(p.DisableCUDAGraph), "disable_cuda_graph_padding=False",
		"enable_profile_cuda_graph=False", "enable_cudagraph_gc=False", "enable_nccl_nvls=False",
		"enable_symm_mem=False", "disable_flashinfer_cutlass_moe_fp4_allgather=False", "enable_tokenizer_batch_encode=False",
		"disable_outlines_disk_cache=False", "disable_custom_all_reduce=False", "enable_mscclpp=False",
		"disable_overlap_schedule=False", "enable_mixed_chunk=False", "enable_dp_attention=False", "enable_dp_lm_head=False",
		"enable_two_batch_overlap=False", "tbo_token_distribution_threshold=0.48", "enable_torch_compile=False",
		"torch_compile_max_bs=32", "torchao_config=''", "enable_nan_detection=False", "enable_p2p_check=False",
		"triton_attention_reduce_in_fp32=False", "triton_attention_num_kv_splits=8", "num_continuous_decode_steps=1",
		"delete_ckpt_after_loading=False", "enable_memory_saver=False", "allow_auto_truncate=False",
		"enable_custom_logit_processor=False", "flashinfer_mla_disable_ragged=False", "disable_shared_experts_fusion=False",
		"disable_chunked_prefix_cache=False", "disable_fast_image_processor=False", "enable_return_hidden_states=False",
		"scheduler_recv_interval=1", "numa_node=None", "debug_tensor_dump_output_folder=None",
		"debug_tensor_dump_input_file=None", "debug_tensor_dump_inject=False", "disaggregation_mode='null'",
		"disaggregation_transfer_backend='mooncake'", "disaggregation_bootstrap_port=8998",
		"disaggregation_decode_tp=None", "disaggregation_decode_dp=None", "disaggregation_prefill_pp=1",
		"disaggregation_ib_device=None", "num_reserved_decode_tokens=512", "custom_weight_loader=[]",
		"weight_loader_disable_mmap=False", "enable_pdmux=False", "sm_group_num=3", "enable_ep_moe=False",
		"enable_deepep_moe=False", "enable_flashinfer_cutlass_moe=False", "enable_flashinfer_trtllm_moe=False",
		"enable_triton_kernel_moe=False", "enable_flashinfer_mxfp4_moe=False",
	}
	return "server_args=ServerArgs(" + strings.Join(fields, ", ") + ")"
}
