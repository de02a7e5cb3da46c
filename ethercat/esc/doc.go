// Package esc describes the EtherCAT Slave Controller's register file
// (ETG.1000.4 and the Beckhoff ESC datasheet, section II): typed register
// addresses and one small type per register block with its size, a decoder
// and an encoder. The master and the simulated segment share these types, so
// both sides agree on every bit by construction.
package esc
