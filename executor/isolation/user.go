package isolation

import (
	"fmt"
	"os/user"
	"strconv"
)

// User is a user programs run as (see [Config].User).
type User struct {
	// Username is the login name (USER and LOGNAME of the programs).
	Username string
	// UID and GID are the user's id and primary group.
	UID, GID uint32
	// Groups are the user's supplementary groups, given to its programs.
	Groups []uint32
	// HomeDir is the programs' HOME.
	HomeDir string
}

// LookupUser finds a user by name, or by numeric id, in the system's user database, with its groups.
func LookupUser(name string) (*User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, numErr := strconv.ParseUint(name, 10, 32); numErr != nil {
			return nil, fmt.Errorf("isolation: user %q: %w", name, err)
		}
		if u, err = user.LookupId(name); err != nil {
			return nil, fmt.Errorf("isolation: user %q: %w", name, err)
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("isolation: user %q: uid %q is not a number (only Unix users are supported)", name, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("isolation: user %q: gid %q is not a number (only Unix users are supported)", name, u.Gid)
	}
	out := &User{Username: u.Username, UID: uint32(uid), GID: uint32(gid), HomeDir: u.HomeDir}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("isolation: groups of user %q: %w", name, err)
	}
	for _, g := range gids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("isolation: user %q: group id %q is not a number", name, g)
		}
		out.Groups = append(out.Groups, uint32(n))
	}
	return out, nil
}

// String returns "name (uid N)".
func (u *User) String() string { return fmt.Sprintf("%s (uid %d)", u.Username, u.UID) }
