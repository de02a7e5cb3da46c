package shm

import "testing"

// TestNoncesDiffer: every segment draws its own nonce, so that a process
// attaching again tells a new segment at the same path from the one it
// knew.
func TestNoncesDiffer(t *testing.T) {
	seen := map[uint64]bool{}
	for range 64 {
		s, err := New(DefaultLayout())
		if err != nil {
			t.Fatal(err)
		}
		n := s.Info().Nonce
		if n == 0 || seen[n] {
			t.Fatalf("nonce %#x: zero or drawn twice in %d segments", n, len(seen)+1)
		}
		seen[n] = true
		_ = s.Close()
	}
	if a, b := fallbackNonce(), randomNonce(); a == 0 || b == 0 || a == b {
		t.Errorf("fallback nonce %#x, random nonce %#x: want two different non-zero numbers", a, b)
	}
}
