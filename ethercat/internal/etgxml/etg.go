package etgxml

// Transitions reads the Transition children of an init command (ESI CoE
// InitCmd, ENI InitCmd): at least one, each a transition of the EtherCAT
// state machine (ETG.2000, ETG.2100): IP, PI, PS, SP, SO, OS, OP, SI, OI,
// IB, BI, II, PP or SS.
func Transitions(x *Errors, e *Element) []string {
	ts := e.Children("Transition")
	if len(ts) == 0 {
		x.At(e, "", "", ErrMissing, "required <Transition> missing: an init command runs at a transition")
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, OneOf(x, t, "IP", "PI", "PS", "SP", "SO", "OS", "OP", "SI", "OI", "IB", "BI", "II", "PP", "SS"))
	}
	return out
}
