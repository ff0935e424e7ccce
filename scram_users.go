package kcompatd

// Bootstrap SCRAM users (kcompatd.scram.users), in the syntax of
// kafka-storage format --add-scram:
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret],SCRAM-SHA-512=[name="bob",password="bob secret",iterations=8192]
//
// Each becomes a salted credential in the data dir at start-up. One
// already stored that the password still opens, with the same iteration
// count, is left as it is, so a restart rewrites nothing.

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol"
)

// scramUser is one entry of kcompatd.scram.users.
type scramUser struct {
	mechanism  *protocol.ScramMechanism
	name       string
	password   string
	iterations int32
}

// parseScramUsers parses kcompatd.scram.users.
func parseScramUsers(s string) ([]scramUser, error) {
	var out []scramUser
	seen := map[[2]string]bool{}
	rest := strings.TrimSpace(s)
	for rest != "" {
		mech, after, ok := strings.Cut(rest, "=[")
		if !ok {
			return nil, fmt.Errorf("%q is not of the form MECHANISM=[name=...,password=...]", rest)
		}
		m := protocol.ScramMechanismByName(strings.TrimSpace(mech))
		if m == nil {
			return nil, fmt.Errorf("unknown SCRAM mechanism %q (SCRAM-SHA-256 or SCRAM-SHA-512)", strings.TrimSpace(mech))
		}
		fields, tail, err := scramUserFields(after)
		if err != nil {
			return nil, err
		}
		u := scramUser{mechanism: m, iterations: m.MinIterations}
		for k, v := range fields {
			switch k {
			case "name":
				u.name = v
			case "password":
				u.password = v
			case "iterations":
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil || n < int64(m.MinIterations) || n > protocol.MaxScramIterations {
					return nil, fmt.Errorf("iterations %q: must be %d to %d", v, m.MinIterations, protocol.MaxScramIterations)
				}
				u.iterations = int32(n)
			default:
				return nil, fmt.Errorf("unknown SCRAM user field %q (name, password, iterations)", k)
			}
		}
		if u.name == "" || u.password == "" {
			return nil, errors.New("each SCRAM user needs a name and a password")
		}
		key := [2]string{m.Name, u.name}
		if seen[key] {
			return nil, fmt.Errorf("%s user %s is given twice", m.Name, u.name)
		}
		seen[key] = true
		out = append(out, u)
		rest = strings.TrimSpace(tail)
		if rest != "" {
			if rest[0] != ',' {
				return nil, fmt.Errorf("expected a comma before %q", rest)
			}
			rest = strings.TrimSpace(rest[1:])
		}
	}
	return out, nil
}

// scramUserFields reads key=value pairs up to the closing "]": values are
// bare (up to "," or "]") or double-quoted (with \" and \\ escapes).
func scramUserFields(s string) (map[string]string, string, error) {
	fields := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ")
		k, after, ok := strings.Cut(s, "=")
		if !ok {
			return nil, "", errors.New("unterminated SCRAM user: expected key=value and ]")
		}
		k = strings.TrimSpace(k)
		var v string
		if strings.HasPrefix(after, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(after) && after[i] != '"'; i++ {
				if after[i] == '\\' && i+1 < len(after) {
					i++
				}
				b.WriteByte(after[i])
			}
			if i >= len(after) {
				return nil, "", errors.New("unterminated quoted SCRAM user value")
			}
			v, after = b.String(), after[i+1:]
		} else {
			i := strings.IndexAny(after, ",]")
			if i < 0 {
				return nil, "", errors.New("unterminated SCRAM user: expected ]")
			}
			v, after = strings.TrimSpace(after[:i]), after[i:]
		}
		if _, dup := fields[k]; dup {
			return nil, "", fmt.Errorf("SCRAM user field %s given twice", k)
		}
		fields[k] = v
		after = strings.TrimLeft(after, " ")
		switch {
		case strings.HasPrefix(after, "]"):
			return fields, after[1:], nil
		case strings.HasPrefix(after, ","):
			s = after[1:]
		default:
			return nil, "", errors.New("unterminated SCRAM user: expected , or ]")
		}
	}
}

// bootstrapScramUsers stores the credentials of kcompatd.scram.users that
// the store does not already hold for the same password and iterations.
func bootstrapScramUsers(store *partition.Store, spec string) (int, error) {
	users, err := parseScramUsers(spec) // Validate checked it
	if err != nil {
		return 0, err
	}
	var upserts []partition.ScramCredential
	for _, u := range users {
		if old, ok := store.ScramCredential(u.name, u.mechanism.Type); ok && old.Iterations == u.iterations {
			c := u.mechanism.Credential(u.name, old.Salt, u.mechanism.SaltedPassword(u.password, old.Salt, int(old.Iterations)), old.Iterations)
			if bytes.Equal(c.StoredKey, old.StoredKey) && bytes.Equal(c.ServerKey, old.ServerKey) {
				continue
			}
		}
		salt := make([]byte, protocol.ScramSaltBytes)
		rand.Read(salt)
		upserts = append(upserts, u.mechanism.Credential(u.name, salt, u.mechanism.SaltedPassword(u.password, salt, int(u.iterations)), u.iterations))
	}
	if len(upserts) == 0 {
		return 0, nil
	}
	return len(upserts), store.AlterScramCredentials(nil, upserts)
}
