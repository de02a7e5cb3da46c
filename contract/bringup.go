package contract

// BringUpFailure is what a cycle process whose bring-up failed writes, as
// one line of JSON, to the pipe the agent gave it (ecagent-cycle
// --report-fd); a cycle process that reaches cyclic operation closes the
// pipe unwritten. The agent then knows why without parsing the log.
type BringUpFailure struct {
	// Reason is one of ReasonLink, ReasonNoAnswer, ReasonNotAsConfigured
	// and ReasonFailed.
	Reason string `json:"reason"`
	// Error is the cycle process's error, in its words.
	Error string `json:"error"`
}

// The reasons of a BringUpFailure.
const (
	// ReasonLink: the network interface could not be opened.
	ReasonLink = "link"
	// ReasonNoAnswer: nothing answered on the segment, no slave was
	// found, or frames went unanswered.
	ReasonNoAnswer = "no-answer"
	// ReasonNotAsConfigured: the segment is not as configured (slave
	// count, a slave refusing a state): ExitBusMismatch.
	ReasonNotAsConfigured = "not-as-configured"
	// ReasonFailed: any other failure.
	ReasonFailed = "failed"
)
