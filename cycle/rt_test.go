package cycle

import "github.com/ecagent/ecagent/cycle/rt"

// noRT leaves the test's threads as they are: no priority, no pinning.
func noRT() rt.Options { return rt.Options{Core: -1} }
