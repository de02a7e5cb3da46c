package broker

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Credential is a user name and password of the broker.
type Credential struct {
	Username, Password string
}

// Auth says who may use the broker. The agent may publish and subscribe
// to anything; an operator may subscribe to anything and publish only to
// CommandFilters (writes, rebirth requests, a host application's
// state); an anonymous client may subscribe to anything when
// AnonymousRead is set and publish nothing; anyone else is refused at
// connection. A publication a client may not make is dropped (QoS 0) or
// ends its connection (QoS 1 and 2 under MQTT 3.1.1, whose PUBACK cannot
// refuse): it never reaches a subscriber or replaces a retained message.
type Auth struct {
	Agent, Operator Credential
	// CommandFilters are the topic filters operators may publish to.
	CommandFilters []string
	// AnonymousRead admits clients without a user name, read-only.
	AnonymousRead bool
}

// authHook enforces an Auth.
type authHook struct {
	mochi.HookBase
	auth Auth
}

// ID implements mochi.Hook.
func (h *authHook) ID() string { return "ecagent-auth" }

// Provides implements mochi.Hook.
func (h *authHook) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}

// OnConnectAuthenticate admits the agent and operators, with their
// password (compared in constant time), and anonymous clients (no user
// name, no password) when AnonymousRead is set.
func (h *authHook) OnConnectAuthenticate(cl *mochi.Client, pk packets.Packet) bool {
	if len(cl.Properties.Username) == 0 && len(pk.Connect.Password) == 0 {
		return h.auth.AnonymousRead
	}
	return h.is(h.auth.Agent, cl.Properties.Username, pk.Connect.Password) ||
		h.is(h.auth.Operator, cl.Properties.Username, pk.Connect.Password)
}

func (h *authHook) is(c Credential, user, password []byte) bool {
	if c.Username == "" || c.Password == "" {
		return false
	}
	userOK := subtle.ConstantTimeCompare(user, []byte(c.Username))
	passOK := subtle.ConstantTimeCompare(password, []byte(c.Password))
	return userOK&passOK == 1
}

// OnACLCheck lets the agent do anything, operators read anything and
// publish to the command filters only, anonymous clients (when admitted)
// read only. The user name was authenticated
// at connection.
func (h *authHook) OnACLCheck(cl *mochi.Client, topic string, write bool) bool {
	switch string(cl.Properties.Username) {
	case "":
		return h.auth.AnonymousRead && !write
	case h.auth.Agent.Username:
		return true
	case h.auth.Operator.Username:
		if !write {
			return true
		}
		for _, f := range h.auth.CommandFilters {
			if auth.RString(f).FilterMatches(topic) {
				return true
			}
		}
	}
	return false
}

// secretBytes is the entropy of a generated password.
const secretBytes = 32

// NewSecret returns a random password: 32 bytes from crypto/rand,
// base64url without padding (43 characters).
func NewSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// LoadOrCreateSecret returns the password kept in the file name in dir,
// creating it with a new random one at first use. The file is created
// mode 0600 under a temporary name opened O_EXCL|O_NOFOLLOW, synced, and
// linked into place (so that a concurrent start never reads half a
// file, and a name planted beforehand is never written through); it is
// read with O_NOFOLLOW and refused unless it is a regular file of this
// user that nobody else may read. created reports a new file.
func LoadOrCreateSecret(dir, name string) (secret string, created bool, err error) {
	path := filepath.Join(dir, name)
	secret, err = readSecret(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return secret, false, err
	}
	secret = NewSecret()
	tmp := filepath.Join(dir, "."+name+"."+NewSecret()[:8])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("broker credential %s: %w", path, err)
	}
	defer os.Remove(tmp)
	_, err = f.WriteString(secret + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, fmt.Errorf("broker credential %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) { // another start made it first
			secret, err = readSecret(path)
			return secret, false, err
		}
		return "", false, fmt.Errorf("broker credential %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the new name survives a power cut
		d.Close()
	}
	return secret, true, nil
}

// readSecret reads the password in path (see LoadOrCreateSecret).
func readSecret(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return "", fmt.Errorf("broker credential %s is a symbolic link; remove it", path)
		}
		return "", fmt.Errorf("broker credential: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("broker credential: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("broker credential %s is not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("broker credential %s is mode %04o: others may read it; chmod 600 it or remove it", path, fi.Mode().Perm())
	case st != nil && int(st.Uid) != os.Geteuid():
		return "", fmt.Errorf("broker credential %s belongs to uid %d, not to this user (%d)", path, st.Uid, os.Geteuid())
	}
	b := make([]byte, 256)
	n, err := f.Read(b)
	if err != nil {
		return "", fmt.Errorf("broker credential %s: %w", path, err)
	}
	secret := string(bytes.TrimSpace(b[:n]))
	if len(secret) < 16 {
		return "", fmt.Errorf("broker credential %s holds no password of at least 16 characters; remove it to make a new one", path)
	}
	return secret, nil
}
