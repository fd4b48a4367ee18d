package store

import "github.com/bringup-dev/bringup/remote/history"

// Previous is host's previous serving run with a steady decode rate under
// unit, whatever its modes (history.Previous). It does no IO.
func (k *Sink) Previous(host, unit string) (history.Record, bool) {
	return history.Previous(k.store.Throughput(host, unit), host, unit)
}
