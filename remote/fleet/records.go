package fleet

import "github.com/bringup-dev/bringup/remote/history"

// Recorder keeps the history records the observers make: a startup that
// reached serving, a serving run's steady decode rate, a bench. Record is
// called from a writer goroutine the fleet owns and may do IO, but must
// return (Run waits for the records queued before it ends). store.Sink
// is one.
type Recorder interface {
	Record(history.Record) error
}

// historyQueue bounds the records waiting for the history writer; beyond
// it records are dropped (and counted) rather than slowing the fold loop.
const historyQueue = 16

// HistoryStats counts what became of the startup records.
type HistoryStats struct {
	Written int `json:"written"`
	// Dropped records found the writer's queue full.
	Dropped int `json:"dropped,omitempty"`
	// Failed records were refused by the sink; LastErr is the latest error.
	Failed  int    `json:"failed,omitempty"`
	LastErr string `json:"last_err,omitempty"`
}

// writeHistory hands each queued record to the Recorder until the queue
// is closed.
func (f *Fleet) writeHistory(q <-chan history.Record) {
	for r := range q {
		if err := f.opts.Records.Record(r); err != nil {
			f.histFailed.Add(1)
			f.histErr.Store(err.Error())
			continue
		}
		f.histWritten.Add(1)
	}
}

// HistoryStats reports the startup records written, dropped and failed so
// far. It is safe to call from any goroutine.
func (f *Fleet) HistoryStats() HistoryStats {
	s := HistoryStats{Written: int(f.histWritten.Load()), Dropped: int(f.histDropped.Load()), Failed: int(f.histFailed.Load())}
	s.LastErr, _ = f.histErr.Load().(string)
	return s
}

// queue hands r to the history writer, or drops it when the writer is
// behind; without a Recorder (no writer) it keeps nothing.
func (f *Fleet) queue(r history.Record) {
	if f.hist == nil {
		return
	}
	select {
	case f.hist <- r:
	default:
		f.histDropped.Add(1)
	}
}
