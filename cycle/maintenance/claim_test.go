package maintenance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

// TestClaimInterface claims an interface, is refused a second claim with
// the holder's pid and segment, asks who holds it, and claims it again
// once released.
func TestClaimInterface(t *testing.T) {
	ctx := context.Background()
	iface := fmt.Sprintf("claimtest%d", os.Getpid())
	if _, ok, err := WhoClaims(ctx, iface); ok || err != nil {
		t.Fatalf("unclaimed interface: held %v, err %v", ok, err)
	}
	c, err := ClaimInterface(ctx, iface, "/run/ecagent/x.shm")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.Serve(sctx)
	_, err = ClaimInterface(ctx, iface, "")
	var ce *ClaimedError
	if !errors.As(err, &ce) || ce.Holder.PID != os.Getpid() || ce.Holder.SHM != "/run/ecagent/x.shm" || ce.Holder.UID != os.Geteuid() {
		t.Fatalf("second claim: %v (%+v)", err, ce)
	}
	h, ok, err := WhoClaims(ctx, iface)
	if !ok || err != nil || h != ce.Holder {
		t.Errorf("WhoClaims: %+v %v %v", h, ok, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := ClaimInterface(ctx, iface, "")
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	_ = c2.Close()
}
