package kcompatd

import (
	"strings"
	"testing"
)

// authorizer.class.name accepts Kafka's KRaft authorizer (or nothing) and
// refuses the ZooKeeper-era AclAuthorizer Kafka 4 removed, saying so.
func TestAuthorizerClassName(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{"", ""},
		{"org.apache.kafka.metadata.authorizer.StandardAuthorizer", ""},
		{"kafka.security.authorizer.AclAuthorizer", "Kafka 4 removed kafka.security.authorizer.AclAuthorizer"},
		{"com.example.MyAuthorizer", "serves only org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
	} {
		cfg, _, err := ParseConfig(map[string]string{"log.dirs": t.TempDir(), "authorizer.class.name": tt.value,
			"super.users": "User:admin;User:ANONYMOUS", "allow.everyone.if.no.acl.found": "true"})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.value, err)
		case tt.want == "" && (cfg.SuperUsers != "User:admin;User:ANONYMOUS" || !cfg.AllowEveryoneIfNoACLFound):
			t.Errorf("%q: parsed %q, %v", tt.value, cfg.SuperUsers, cfg.AllowEveryoneIfNoACLFound)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %v, want %q", tt.value, err, tt.want)
		}
	}
}
