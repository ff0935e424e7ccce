package protocol

// DescribeUserScramCredentials: v0-0; AlterUserScramCredentials: v0-0
//
// Behavior (Kafka's ScramImage.describe and ScramControlManager.alterCredentials):
//   - Describe with no users lists every user with a credential, sorted;
//     named users are answered once each: DUPLICATE_RESOURCE "Cannot
//     describe SCRAM credentials for the same user twice in a single
//     request: <user>" for one named twice, RESOURCE_NOT_FOUND "Attempt to
//     describe a user credential that does not exist: <user>" for one
//     without a credential, else its mechanisms and iteration counts.
//   - Alter applies deletions and upsertions all or nothing, keyed by user
//     name: a user named twice in one request (in either list) gets
//     DUPLICATE_RESOURCE "A user credential cannot be altered twice in the
//     same request"; an empty name UNACCEPTABLE_CREDENTIAL "Username must
//     not be empty"; a mechanism other than 1 (SCRAM-SHA-256) and 2
//     (SCRAM-SHA-512) UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM
//     mechanism"; iterations below 4096 or above 16384
//     UNACCEPTABLE_CREDENTIAL "Too few iterations" / "Too many
//     iterations"; deleting a credential that does not exist
//     RESOURCE_NOT_FOUND "Attempt to delete a user credential that does
//     not exist". Results list the deletions, then the upsertions, then
//     the errors, each in request order (Kafka: hash order).
//   - The server stores StoredKey and ServerKey derived from the salted
//     password, never the salted password itself, in the data dir
//     (partition/scram_credentials.go), so they survive a restart.
//   - kcompatd's own bounds, which Kafka does not have: a user name or a
//     salt of 1 to 1024 bytes (UNACCEPTABLE_CREDENTIAL with the reason),
//     and at most 4 MiB of credentials in all.
//   - No authorizer: every principal may describe and alter.

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() {
	register(kmsg.DescribeUserSCRAMCredentials.Int16(), 0, 0, handleDescribeUserScramCredentials)
	register(kmsg.AlterUserSCRAMCredentials.Int16(), 0, 0, handleAlterUserScramCredentials)
}

func handleDescribeUserScramCredentials(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if resp.ErrorCode = s.clusterAuthCode(r, authz.OpDescribe); resp.ErrorCode != 0 {
		return resp, nil
	}
	var all []partition.ScramCredential
	if s.store != nil {
		all = s.store.ScramCredentials() // sorted by user, then mechanism
	}
	byUser := map[string][]partition.ScramCredential{}
	var users []string
	for _, c := range all {
		if _, ok := byUser[c.User]; !ok {
			users = append(users, c.User)
		}
		byUser[c.User] = append(byUser[c.User], c)
	}
	var named []string
	dup := map[string]bool{}
	if len(req.Users) > 0 {
		for _, u := range req.Users {
			if _, seen := dup[u.Name]; seen {
				dup[u.Name] = true
				continue
			}
			dup[u.Name] = false
			named = append(named, u.Name)
		}
		users = named
	}
	for _, u := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		switch creds := byUser[u]; {
		case dup[u]:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = msgPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
		case len(creds) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = msgPtr("Attempt to describe a user credential that does not exist: " + u)
		default:
			for _, c := range creds {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = c.Mechanism, c.Iterations
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// scramAlterError is one user's failure in AlterUserScramCredentials.
type scramAlterError struct {
	user string
	code int16
	msg  string
}

func handleAlterUserScramCredentials(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	if code := s.clusterAuthCode(r, authz.OpAlter); code != 0 {
		seen := map[string]bool{}
		answer := func(u string) {
			if !seen[u] {
				seen[u] = true
				resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: u, ErrorCode: code})
			}
		}
		for _, d := range req.Deletions {
			answer(d.Name)
		}
		for _, u := range req.Upsertions {
			answer(u.Name)
		}
		return resp, nil
	}
	var errs []scramAlterError
	failed := map[string]bool{}
	fail := func(user string, e *kerr.Error, msg string) {
		failed[user] = true
		errs = append(errs, scramAlterError{user, e.Code, msg})
	}
	// pending: the users with a change still in this request.
	var deletes []partition.ScramKey
	var upserts []partition.ScramCredential
	var order []string // users of deletes and upserts, in their order
	pending := map[string]bool{}
	drop := func(user string) {
		deletes = slices.DeleteFunc(deletes, func(k partition.ScramKey) bool { return k.User == user })
		upserts = slices.DeleteFunc(upserts, func(c partition.ScramCredential) bool { return c.User == user })
		order = slices.DeleteFunc(order, func(u string) bool { return u == user })
		delete(pending, user)
	}
	// screen runs the checks both lists share: false if the change of
	// user name (of mechanism mech) is refused.
	screen := func(name string, mech int8) bool {
		switch {
		case failed[name]:
		case pending[name]:
			drop(name)
			fail(name, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		case name == "":
			fail(name, kerr.UnacceptableCredential, "Username must not be empty")
		case scramMechanismByType(mech) == nil:
			fail(name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		default:
			return true
		}
		return false
	}
	for _, d := range req.Deletions {
		if !screen(d.Name, d.Mechanism) {
			continue
		}
		if _, ok := s.scramCredential(d.Name, d.Mechanism); !ok {
			fail(d.Name, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
			continue
		}
		pending[d.Name] = true
		order = append(order, d.Name)
		deletes = append(deletes, partition.ScramKey{User: d.Name, Mechanism: d.Mechanism})
	}
	for _, u := range req.Upsertions {
		if !screen(u.Name, u.Mechanism) {
			continue
		}
		m := scramMechanismByType(u.Mechanism)
		switch {
		case u.Iterations < m.MinIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too few iterations")
			continue
		case u.Iterations > MaxScramIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too many iterations")
			continue
		}
		c := m.Credential(u.Name, u.Salt, u.SaltedPassword, u.Iterations)
		if err := c.Check(); err != nil {
			fail(u.Name, kerr.UnacceptableCredential, err.Error())
			continue
		}
		pending[u.Name] = true
		order = append(order, u.Name)
		upserts = append(upserts, c)
	}
	if len(order) > 0 {
		var err error
		if s.store == nil {
			err = errors.New("protocol: no store")
		} else {
			err = s.store.AlterScramCredentials(deletes, upserts)
		}
		if err != nil {
			code, msg := kerr.UnknownServerError.Code, "The server experienced an unexpected error when processing the request."
			if errors.Is(err, partition.ErrScramCredentialsFull) {
				code, msg = kerr.UnacceptableCredential.Code, "kcompatd keeps at most 4 MiB of SCRAM credentials"
			} else {
				s.log.Error().Err(err).Msg("storing SCRAM credentials failed")
			}
			for _, u := range order {
				errs = append(errs, scramAlterError{u, code, msg})
			}
			order = nil
		}
	}
	// Deletions first, then upsertions, then the failures.
	for _, u := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = u
		resp.Results = append(resp.Results, res)
	}
	for _, e := range errs {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = e.user, e.code, msgPtr(e.msg)
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func (s *Server) scramCredential(user string, mechanism int8) (partition.ScramCredential, bool) {
	if s.store == nil {
		return partition.ScramCredential{}, false
	}
	return s.store.ScramCredential(user, mechanism)
}
