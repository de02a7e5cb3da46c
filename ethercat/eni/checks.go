package eni

import (
	"fmt"

	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// place is where a slave is in its file, kept for the checks made once
// every slave is read (the slave's element is gone by then).
type place struct {
	line, col int
	path      string
}

func placeOf(e *etgxml.Element) place {
	return place{line: e.Line, col: e.Col, path: e.Path()}
}

// checkSlaves checks what holds across slaves: no two slaves share a
// configured station address or a ring position.
func checkSlaves(x *etgxml.Errors, cfg *Config, at []place) {
	phys := map[uint16]int{}
	pos := map[int]int{}
	for i, s := range cfg.Slaves {
		if a := s.Info.PhysAddr; a != nil {
			if j, dup := phys[*a]; dup {
				x.AtPath(at[i].line, at[i].col, at[i].path+"/Info/PhysAddr", fmt.Sprint(*a), ErrValue,
					"PhysAddr %d is also slave %d's (%s): each slave needs an address of its own", *a, j+1, cfg.Slaves[j].Info.Name)
			}
			phys[*a] = i
		}
		if p, ok := s.Info.Position(); ok {
			if j, dup := pos[p]; dup {
				x.AtPath(at[i].line, at[i].col, at[i].path+"/Info/AutoIncAddr", fmt.Sprint(*s.Info.AutoIncAddr), ErrValue,
					"AutoIncAddr %d is ring position %d, also slave %d's (%s)", *s.Info.AutoIncAddr, p, j+1, cfg.Slaves[j].Info.Name)
			}
			pos[p] = i
		}
	}
}
