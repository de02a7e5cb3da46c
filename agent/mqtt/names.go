package mqtt

// DefaultSignalName is the name a signal is published under by default:
// its PDO's and its entry's names, lower case, runs of other characters
// than letters and digits as '_' ("Channel 1", "Input" → channel_1.input).
// Rules (mqtt.signals) name signals by it; a configuration written from
// an ENI uses it to rename them.
func DefaultSignalName(pdo, entry string) string {
	return entryName(Entry{PDOName: pdo, Name: entry})
}
