// Package test holds end-to-end tests that start real things: network
// namespaces and veth pairs, the ecagent binary, a simulated segment on one
// end of the wire and the master on the other, and Wireshark's dissector
// (tshark) to check every frame that crossed it. They need root (CI runs as
// root) and skip with the reason otherwise.
package test
