// Package gpu reads a host's GPUs: memory, utilisation and power per device
// from one long-running `nvidia-smi --query-gpu … -lms` process, as samples
// of every device at one moment. While weights load and the logs are quiet,
// memory climbing toward the level of the last successful start is the only
// sign of progress, so WeightProgress turns a sample into one.
package gpu

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-dev/bringup/remote/event"
)

// Query is the field list Run asks nvidia-smi for, in the column order
// ParseCSV assumes when the text has no header.
const Query = "timestamp,index,name,memory.used,memory.total,utilization.gpu,power.draw"

// TimeLayout is how nvidia-smi prints its timestamp column: the host's
// local wall clock, without a zone.
const TimeLayout = "2006/01/02 15:04:05.000"

// maxLine caps one line of nvidia-smi output; longer lines are not CSV rows
// of ours and are cut rather than letting the scanner grow.
const maxLine = 4096

// Command is the nvidia-smi command line that prints one CSV row per GPU
// every interval (rounded to whole milliseconds, at least 1).
func Command(interval time.Duration) string {
	ms := max(interval.Milliseconds(), 1)
	return fmt.Sprintf("nvidia-smi --query-gpu=%s --format=csv,noheader,nounits -lms %d", Query, ms)
}

// Sample is one poll of every GPU of a host.
type Sample struct {
	// Time is the poll's timestamp as the host printed it, read as if it
	// were UTC: nvidia-smi prints local time without a zone. Run corrects
	// it to a real instant.
	Time time.Time
	GPU  event.GPU
}

// The columns the parser reads; others are skipped.
const (
	colTimestamp = "timestamp"
	colIndex     = "index"
	colName      = "name"
	colMemUsed   = "memory.used"
	colMemTotal  = "memory.total"
	colUtil      = "utilization.gpu"
	colPower     = "power.draw"
)

// column returns the column a header field names ("memory.used [MiB]" is
// memory.used), and whether the parser knows it.
func column(h string) (string, bool) {
	name, _, _ := strings.Cut(h, " [")
	switch name {
	case colTimestamp, colIndex, colName, colMemUsed, colMemTotal, colUtil, colPower:
		return name, true
	case "gpu_name":
		return colName, true
	}
	return "", false
}

// defaultColumns are Query's columns.
func defaultColumns() []string { return strings.Split(Query, ",") }

// Parser groups nvidia-smi CSV rows into samples. Rows of one poll share a
// timestamp and list each device once, so a row with another timestamp or
// with an index already in the sample starts the next sample. A header row
// (when the format lacks noheader) sets the column order; without one the
// columns are Query's. Unit suffixes ("MiB", "%", "W") are accepted, and
// values nvidia-smi cannot read ("[N/A]", "[Not Supported]") are zero.
type Parser struct {
	cols []string
	cur  *Sample
	seen map[int]bool
}

// NewParser returns a parser expecting Query's columns.
func NewParser() *Parser {
	return &Parser{cols: defaultColumns()}
}

// Line parses one row. It returns the previous sample when this row starts
// a new one. A row that cannot be read is an error and changes nothing.
func (p *Parser) Line(line string) (done *Sample, err error) {
	line = strings.TrimRight(line, "\r\n")
	if strings.TrimSpace(line) == "" {
		return nil, nil
	}
	fields := strings.Split(line, ",")
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	if cols, ok := header(fields); ok {
		p.cols = cols
		return nil, nil
	}
	if len(fields) != len(p.cols) {
		return nil, fmt.Errorf("%d fields, want %d (%s)", len(fields), len(p.cols), strings.Join(p.cols, ","))
	}
	ts, dev, err := p.row(fields)
	if err != nil {
		return nil, err
	}
	if p.cur != nil && (!ts.Equal(p.cur.Time) || p.seen[dev.Index]) {
		done = p.cur
		p.cur = nil
	}
	if p.cur == nil {
		p.cur = &Sample{Time: ts}
		p.seen = map[int]bool{}
	}
	p.cur.GPU.Devices = append(p.cur.GPU.Devices, dev)
	p.seen[dev.Index] = true
	return done, nil
}

// Complete reports whether the sample being built has a row for each of
// devices devices (0: unknown, never complete).
func (p *Parser) Complete(devices int) bool {
	return devices > 0 && p.cur != nil && len(p.cur.GPU.Devices) >= devices
}

// Flush returns the sample being built, if any, and forgets it: Run calls
// it when the stream goes quiet after a poll, because the parser cannot
// know that the last device of a poll was the last until the next poll,
// or once it has as many devices as the poll before (Complete).
func (p *Parser) Flush() *Sample {
	s := p.cur
	p.cur, p.seen = nil, nil
	return s
}

// header reports whether fields are a header row and, if so, the columns
// ("" for ones the parser skips). A data row never starts with a column
// name: its first field is a timestamp or a number.
func header(fields []string) ([]string, bool) {
	if _, ok := column(fields[0]); !ok {
		return nil, false
	}
	cols := make([]string, len(fields))
	for i, f := range fields {
		cols[i], _ = column(f)
	}
	return cols, true
}

// row reads one data row.
func (p *Parser) row(fields []string) (time.Time, event.GPUDevice, error) {
	var ts time.Time
	var dev event.GPUDevice
	hasIndex := false
	for i, col := range p.cols {
		v := fields[i]
		var err error
		switch col {
		case colTimestamp:
			ts, err = time.Parse(TimeLayout, v)
		case colIndex:
			dev.Index, err = strconv.Atoi(v)
			hasIndex = err == nil
			if err == nil && dev.Index < 0 {
				err = errors.New("negative")
			}
		case colName:
			dev.Name = v
		case colMemUsed:
			dev.MemUsedMiB, err = intValue(v, "MiB")
		case colMemTotal:
			dev.MemTotalMiB, err = intValue(v, "MiB")
		case colUtil:
			dev.UtilPct, err = intValue(v, "%")
		case colPower:
			dev.PowerW, err = floatValue(v, "W")
		}
		if err != nil {
			return ts, dev, fmt.Errorf("%s %q: %w", col, v, unwrapNum(err))
		}
	}
	if !hasIndex {
		return ts, dev, errors.New("no index column")
	}
	return ts, dev, nil
}

// unwrapNum drops strconv's repetition of the input.
func unwrapNum(err error) error {
	if ne, ok := errors.AsType[*strconv.NumError](err); ok {
		return ne.Err
	}
	return err
}

// unavailable reports whether v is how nvidia-smi says it has no value:
// "[N/A]", "[Not Supported]", "[Unknown Error]", "[GPU is lost]", "N/A".
func unavailable(v string) bool {
	return v == "N/A" || strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]")
}

// intValue reads an integer with an optional unit suffix; unavailable is 0.
func intValue(v, unit string) (int, error) {
	if unavailable(v) {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(v, unit)))
	if err == nil && n < 0 {
		return 0, errors.New("negative")
	}
	return n, err
}

// floatValue reads a decimal with an optional unit suffix; unavailable is 0.
func floatValue(v, unit string) (float64, error) {
	if unavailable(v) {
		return 0, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, unit)), 64)
	if err == nil && (f < 0 || f != f || f > 1e6) {
		return 0, errors.New("out of range")
	}
	return f, err
}

// ParseCSV reads nvidia-smi --query-gpu output (with or without header
// and units) into samples. The first unreadable row is an error naming
// its line.
func ParseCSV(r io.Reader) ([]Sample, error) {
	p := NewParser()
	var out []Sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for n := 1; sc.Scan(); n++ {
		done, err := p.Line(sc.Text())
		if err != nil {
			return out, fmt.Errorf("line %d: %w", n, err)
		}
		if done != nil {
			out = append(out, *done)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read nvidia-smi output: %w", err)
	}
	if s := p.Flush(); s != nil {
		out = append(out, *s)
	}
	return out, nil
}
