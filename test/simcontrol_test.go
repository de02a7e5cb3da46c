package test

import (
	"bufio"
	"net"
	"strings"
	"testing"
)

// dialControl connects to the simulator's control socket.
func dialControl(t *testing.T, path string) func(string) string {
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	rd := bufio.NewReader(conn)
	return func(cmd string) string {
		if _, err := conn.Write([]byte(cmd + "\n")); err != nil {
			t.Fatal(err)
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "error") {
			t.Errorf("%q: %s", cmd, line)
		}
		return line
	}
}
