package master

// assignParents sets each slave's Parent from the open ports of DL status.
//
// A frame enters a slave on port 0 and leaves through its other open ports
// one after the other (3, 1, 2), visiting each branch to its end before the
// next: ring order is a depth-first walk of the tree. So a slave's parent is
// the nearest slave before it that still has an open downstream port whose
// branch has not been walked yet. A slave that reports no open port at all
// is taken as an end of line.
func assignParents(slaves []*Slave) {
	type open struct {
		pos  int
		left int // downstream ports whose branch is not yet walked
	}
	var stack []open
	for i, s := range slaves {
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
		switch {
		case i == 0:
			s.Parent = NoParent
		case len(stack) == 0:
			// More slaves than the ports announced: DL status is
			// inconsistent, the previous slave is the best guess.
			s.Parent = i - 1
		default:
			top := &stack[len(stack)-1]
			s.Parent = top.pos
			top.left--
		}
		downstream := -1 // port 0 leads back to the parent
		for _, p := range s.Ports {
			if p {
				downstream++
			}
		}
		stack = append(stack, open{pos: i, left: max(downstream, 0)})
	}
}
