package sglang

import (
	"fmt"
	"strings"
	"time"
)

// formatInterval renders a duration the way tqdm's format_interval does:
// mm:ss below an hour, h:mm:ss above.
func formatInterval(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	h, m := s/3600, s/60%60
	s %= 60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%02d:%02d", m, s)
}

// rateFmt renders tqdm's {rate_fmt}: "s/it" when an iteration takes longer
// than a second, "it/s" otherwise, with the {:5.2f} padding that gives the
// double space in ",  7.27s/it".
func rateFmt(n int, elapsed time.Duration) string {
	if n == 0 || elapsed <= 0 {
		return "?it/s"
	}
	perIt := elapsed.Seconds() / float64(n)
	if perIt >= 1 {
		return fmt.Sprintf("%5.2fs/it", perIt)
	}
	return fmt.Sprintf("%5.2fit/s", 1/perIt)
}

// remaining is tqdm's {remaining} at the average rate so far.
func remaining(n, total int, elapsed time.Duration) string {
	if n == 0 {
		return "?"
	}
	return formatInterval(time.Duration(float64(elapsed) / float64(n) * float64(total-n)))
}

// ShardLine is one refresh of the safetensors loader's bar, whose
// bar_format ends in "\n" so that every refresh is its own line:
// "Loading safetensors checkpoint shards:  12% Completed | 8/65 [00:58<07:52,  7.27s/it]".
func ShardLine(n, total int, elapsed time.Duration) string {
	pct := 100 * float64(n) / float64(total)
	return fmt.Sprintf("Loading safetensors checkpoint shards: %3.0f%% Completed | %d/%d [%s<%s, %s]",
		pct, n, total, formatInterval(elapsed), remaining(n, total, elapsed), rateFmt(n, elapsed))
}

// CaptureBarLine is one refresh of the graph-capture bar, a normal tqdm
// with a ten-cell bar: "Capturing batches (bs=1 avail_mem=13.61 GB): 100%|██████████| 23/23 [01:12<00:00,  3.14s/it]".
func CaptureBarLine(bs int, availGB float64, n, total int, elapsed time.Duration) string {
	frac := float64(n) / float64(total)
	full := int(frac * 10)
	bar := strings.Repeat("█", full)
	if full < 10 {
		// tqdm draws a partial cell with one of the eighth blocks.
		eighths := int((frac*10 - float64(full)) * 8)
		if eighths > 0 {
			bar += string([]rune("▏▎▍▌▋▊▉")[eighths-1])
		} else {
			bar += " "
		}
		bar += strings.Repeat(" ", 10-full-1)
	}
	return fmt.Sprintf("Capturing batches (bs=%d avail_mem=%.2f GB): %3.0f%%|%s| %d/%d [%s<%s, %s]",
		bs, availGB, 100*frac, bar, n, total, formatInterval(elapsed), remaining(n, total, elapsed), rateFmt(n, elapsed))
}
