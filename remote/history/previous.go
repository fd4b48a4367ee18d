package history

// Previous is host's previous serving run with a steady decode rate: the
// newest throughput record of host and unit among records (any order,
// other hosts' and kinds ignored), whatever its kernel modes. A rollout
// compares the run it starts with it ("before"). ok is false when the
// host has none.
func Previous(records []Record, host, unit string) (Record, bool) {
	var best Record
	found := false
	for _, r := range records {
		if r.Kind != KindThroughput || r.Host != host || r.Unit != unit || r.DecodeTPS <= 0 {
			continue
		}
		if !found || r.Time.After(best.Time) {
			best, found = r, true
		}
	}
	return best, found
}
