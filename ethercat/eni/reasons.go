package eni

import "github.com/ecagent/ecagent/ethercat/internal/etgxml"

// why says why an element or attribute of ETG.2100 is not read, by the
// last steps of its path; anything it does not name gets etgxml.NotRead.
func why(pattern string) string {
	two, one := etgxml.LastSteps(pattern)
	switch two {
	case "Cmd/CopyInfos":
		return "ignored: slave-to-slave copies (CopyInfos) are not supported: no input is copied to an output"
	case "Cyclic/Priority", "Cyclic/TaskId":
		return "ignored: the application schedules its cycle"
	case "Mailbox/EoE", "Mailbox/SoE", "Mailbox/FoE", "Mailbox/AoE", "Mailbox/VoE":
		return "ignored: " + one + " settings and init commands are not supported; only CoE init commands are run"
	case "Slave/HotConnect":
		return "ignored: hot-connect groups are not supported"
	case "Slave/Slots", "Slave/Modules":
		return "ignored: the modules of modular slaves are not read"
	}
	switch one {
	case "VendorSpecific":
		return "ignored: vendor-specific content"
	}
	return ""
}
