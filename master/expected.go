package master

import (
	"errors"
	"fmt"
)

// ExpectedSlave is what the configuration says is at one ring position
// (an ENI's Config/Slave): Scan checks every slave it finds against it, and
// Reconnect a returning one, before anything is configured.
type ExpectedSlave struct {
	Position int
	// Name is the configuration's name of the slave (the ENI's, e.g.
	// "Term 3 (EL2004)"); errors name the slave by it.
	Name string
	// VendorID, ProductCode and Revision are compared with the SII's
	// identity; Revision as RevisionPolicy says.
	VendorID, ProductCode, Revision uint32
	RevisionPolicy                  RevisionPolicy
	// Alias, when CheckAlias, is the station alias (0x0012) the slave
	// must hold (the ENI's explicit device identification).
	Alias      uint16
	CheckAlias bool
	// PreviousPort is the port of the previous slave (Previous) this one
	// is connected to, "A" to "D"; "" checks nothing. Previous is the
	// previous slave's ring position, NoParent for the master.
	PreviousPort string
	Previous     int
	// Startup are the commands run on the slave at its state transitions,
	// in this order (see StartupCmd).
	Startup []StartupCmd
	// OutputBits and InputBits are the process data the slave's PDO
	// assignment must give once its startup commands ran, checked before
	// the image is mapped; -1 checks nothing.
	OutputBits, InputBits int
}

// RevisionPolicy says how a slave's revision is compared with the
// configured one.
type RevisionPolicy uint8

// The revision policies.
const (
	// RevisionExact: the same revision number.
	RevisionExact RevisionPolicy = iota
	// RevisionMinimum: the configured revision or a later one.
	RevisionMinimum
	// RevisionAny: the revision is not compared.
	RevisionAny
)

// String returns the policy's name as the configuration writes it.
func (p RevisionPolicy) String() string {
	switch p {
	case RevisionExact:
		return "exact"
	case RevisionMinimum:
		return "minimum"
	case RevisionAny:
		return "any"
	}
	return fmt.Sprintf("RevisionPolicy(%d)", uint8(p))
}

// TopologyError reports a slave that is not as the configuration expects
// (Config.Expected): the ring position, the configured name, the field
// that differs (vendor, product code, revision, alias, previous port,
// presence), and what was expected and found.
type TopologyError struct {
	Position int
	Name     string // the configuration's name; "" for a slave it does not list
	Field    string
	Expected string
	Found    string
}

// Error names the slave, the field and both values.
func (e *TopologyError) Error() string {
	name := e.Name
	if name == "" {
		name = "not configured"
	}
	return fmt.Sprintf("master: slave %d (%s): %s: expected %s, found %s", e.Position, name, e.Field, e.Expected, e.Found)
}

// ETG.2100 names a slave's ports A to D; the ESC numbers them 0 to 3.
var portLetters = [...]string{"A", "B", "C", "D"}

// parentPorts returns, per slave, the port of its parent it hangs off (0
// to 3), or -1 for a slave connected to the master: the parent's open
// ports other than 0 in the order the frame takes them (3, 1, 2) go to
// its children in ring order.
func parentPorts(slaves []*Slave) []int {
	out := make([]int, len(slaves))
	used := make([]int, len(slaves)) // children seen per slave
	for i, s := range slaves {
		out[i] = -1
		if s.Parent == NoParent || s.Parent < 0 || s.Parent >= len(slaves) {
			continue
		}
		p := slaves[s.Parent]
		n := used[s.Parent]
		used[s.Parent]++
		for _, port := range [...]int{3, 1, 2} {
			if !p.Ports[port] {
				continue
			}
			if n == 0 {
				out[i] = port
				break
			}
			n--
		}
	}
	return out
}

// checkTopology compares the slaves Scan found with Config.Expected and
// returns every difference as a *TopologyError (joined), nil when the
// segment is as configured.
func (m *Master) checkTopology(slaves []*Slave) error {
	exp := m.cfg.Expected
	ports := parentPorts(slaves)
	var errs []error
	for pos := range max(len(slaves), len(exp)) {
		switch {
		case pos >= len(slaves):
			e := exp[pos]
			errs = append(errs, &TopologyError{Position: pos, Name: e.Name, Field: "presence",
				Expected: identityText(e.VendorID, e.ProductCode, e.Revision),
				Found:    fmt.Sprintf("no slave (the segment has %d slaves, the configuration %d)", len(slaves), len(exp))})
		case pos >= len(exp):
			s := slaves[pos]
			errs = append(errs, &TopologyError{Position: pos, Field: "presence",
				Expected: fmt.Sprintf("no slave (the configuration has %d slaves)", len(exp)),
				Found:    fmt.Sprintf("%s, %s", s.displayName(), identityText(s.Identity.VendorID, s.Identity.ProductCode, s.Identity.Revision))})
		default:
			errs = append(errs, exp[pos].check(slaves[pos], ports[pos])...)
		}
	}
	return errors.Join(errs...)
}

// check compares one slave with what is expected at its position: the
// identity, then the alias and the previous port; parentPort is the port
// of its parent it hangs off (-1: the master).
func (e ExpectedSlave) check(s *Slave, parentPort int) []error {
	var errs []error
	bad := func(field, want, got string) {
		errs = append(errs, &TopologyError{Position: s.Position, Name: e.Name, Field: field, Expected: want, Found: got})
	}
	id := s.Identity
	if id.VendorID != e.VendorID {
		bad("vendor", fmt.Sprintf("%#08x", e.VendorID), fmt.Sprintf("%#08x (%s)", id.VendorID, s.displayName()))
	}
	if id.ProductCode != e.ProductCode {
		bad("product code", fmt.Sprintf("%#08x", e.ProductCode), fmt.Sprintf("%#08x (%s)", id.ProductCode, s.displayName()))
	}
	if len(errs) == 0 && !e.revisionOK(id.Revision) {
		bad("revision", fmt.Sprintf("%#08x (%s)", e.Revision, e.RevisionPolicy), fmt.Sprintf("%#08x", id.Revision))
	}
	if e.CheckAlias && s.Alias != e.Alias {
		bad("alias", fmt.Sprintf("%d", e.Alias), fmt.Sprintf("%d", s.Alias))
	}
	if e.PreviousPort != "" {
		want := fmt.Sprintf("port %s of slave %d", e.PreviousPort, e.Previous)
		switch {
		case e.Previous == NoParent:
			want = "the master"
			if s.Parent != NoParent {
				bad("previous port", want, fmt.Sprintf("slave %d", s.Parent))
			}
		case s.Parent == NoParent:
			bad("previous port", want, "the master")
		case parentPort < 0 || s.Parent != e.Previous || portLetters[parentPort] != e.PreviousPort:
			got := fmt.Sprintf("slave %d", s.Parent)
			if parentPort >= 0 {
				got = fmt.Sprintf("port %s of slave %d", portLetters[parentPort], s.Parent)
			}
			bad("previous port", want, got)
		}
	}
	return errs
}

// revisionOK reports whether revision is acceptable under the policy.
func (e ExpectedSlave) revisionOK(revision uint32) bool {
	switch e.RevisionPolicy {
	case RevisionMinimum:
		return revision >= e.Revision
	case RevisionAny:
		return true
	}
	return revision == e.Revision
}

// identityText renders an identity for a TopologyError.
func identityText(vendor, product, revision uint32) string {
	return fmt.Sprintf("vendor %#08x product %#08x revision %#08x", vendor, product, revision)
}

// expected returns the configured slave at position, if the configuration
// lists one.
func (m *Master) expected(position int) (ExpectedSlave, bool) {
	if position < 0 || position >= len(m.cfg.Expected) {
		return ExpectedSlave{}, false
	}
	return m.cfg.Expected[position], true
}

// checkProcessData compares the slaves' process-data sizes, as their PDO
// assignment gives them, with the configured ones.
func (m *Master) checkProcessData(slaves []*Slave) error {
	var errs []error
	for _, s := range slaves {
		e, ok := m.expected(s.Position)
		if !ok {
			continue
		}
		for _, c := range []struct {
			field     string
			want, got int
			pdos      []PDO
		}{{"output bits", e.OutputBits, s.OutputBits, s.RxPDOs}, {"input bits", e.InputBits, s.InputBits, s.TxPDOs}} {
			if c.want >= 0 && c.want != c.got {
				errs = append(errs, &TopologyError{Position: s.Position, Name: e.Name, Field: c.field,
					Expected: fmt.Sprintf("%d (the configured PDO assignment)", c.want),
					Found:    fmt.Sprintf("%d (PDOs %s, from %s)", c.got, pdoList(c.pdos), s.PDOSource)})
			}
		}
	}
	return errors.Join(errs...)
}
