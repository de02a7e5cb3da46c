package broker

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

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
	// AgentClientID is the agent's client identifier: a connection with
	// it under any credentials but the agent's is refused ("identifier
	// rejected"), so that nobody takes the agent's session over (which
	// would disconnect it, and flip its status, at each such connection).
	AgentClientID string
	// NoRetain are the topic filters of the agent's commands: a
	// publication with the retain flag there is refused as above, whoever
	// makes it, and never stored — a stored command would be delivered
	// again at every subscription of the agent.
	NoRetain []string
	// RetainRefused, when set, is told the topic of each refused retained
	// publication, on the publishing client's goroutine; it must not
	// block.
	RetainRefused func(topic string)
}

// authHook enforces an Auth.
type authHook struct {
	mochi.HookBase
	auth Auth
	srv  *mochi.Server
	log  *slog.Logger

	mu       sync.Mutex
	warned   time.Time // the last warning about a refused client id
	unwarned int       // refusals since, not warned about
}

// ID implements mochi.Hook.
func (h *authHook) ID() string { return "ecagent-auth" }

// Provides implements mochi.Hook.
func (h *authHook) Provides(b byte) bool {
	return b == mochi.OnConnect || b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck || b == mochi.OnPublish
}

// errClientIDTaken ends a connection that asked for the agent's client id
// under other credentials (logged by the hook, rate-limited).
var errClientIDTaken = fmt.Errorf("%w: the agent's client id under other credentials", packets.ErrClientIdentifierNotValid)

// clientIDWarnEvery bounds the warnings about refused client ids: a client
// that keeps trying costs one line per interval.
const clientIDWarnEvery = 10 * time.Second

// OnConnect refuses the agent's client id under any other credentials,
// with CONNACK "identifier rejected", before mochi-mqtt would take the
// agent's session over.
func (h *authHook) OnConnect(cl *mochi.Client, pk packets.Packet) error {
	if h.auth.AgentClientID == "" || cl.ID != h.auth.AgentClientID ||
		h.is(h.auth.Agent, cl.Properties.Username, pk.Connect.Password) {
		return nil
	}
	h.mu.Lock()
	warn := time.Since(h.warned) >= clientIDWarnEvery
	refused := h.unwarned + 1
	if warn {
		h.warned, h.unwarned = time.Now(), 0
	} else {
		h.unwarned++
	}
	h.mu.Unlock()
	if warn {
		h.log.Warn("embedded MQTT broker: refused a connection with the agent's client id under other credentials",
			"client_id", cl.ID, "user", string(cl.Properties.Username), "remote", cl.Net.Remote, "refused", refused)
	}
	_ = h.srv.SendConnack(cl, packets.ErrClientIdentifierNotValid, false, nil)
	return errClientIDTaken
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
		return !write || matchesAny(h.auth.CommandFilters, topic)
	}
	return false
}

// OnPublish refuses a retained publication on the agent's command
// topics: QoS 0 is dropped; QoS 1 and 2 end the connection under MQTT
// 3.1.1 (as a forbidden publication does) and get a PUBACK "not
// authorized" under MQTT 5. Nothing is forwarded or stored.
func (h *authHook) OnPublish(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if !pk.FixedHeader.Retain || !matchesAny(h.auth.NoRetain, pk.TopicName) {
		return pk, nil
	}
	if h.auth.RetainRefused != nil {
		h.auth.RetainRefused(pk.TopicName)
	}
	h.log.Debug("embedded MQTT broker: refused a retained command", "topic", pk.TopicName,
		"client_id", cl.ID, "user", string(cl.Properties.Username))
	if pk.FixedHeader.Qos == 0 {
		return pk, packets.ErrRejectPacket
	}
	if cl.Properties.ProtocolVersion >= 5 {
		return pk, packets.ErrNotAuthorized // answered in the PUBACK, not forwarded
	}
	_ = h.srv.DisconnectClient(cl, packets.ErrNotAuthorized)
	return pk, packets.ErrRejectPacket
}

// matchesAny reports whether topic matches one of filters.
func matchesAny(filters []string, topic string) bool {
	for _, f := range filters {
		if auth.RString(f).FilterMatches(topic) {
			return true
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
