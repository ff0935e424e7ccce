package kcompatd

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kcompatd/kcompatd/internal/configdef"

	"github.com/kcompatd/kcompatd/protocol"
)

// Per-listener properties, Kafka's way (ListenerName.configPrefix and
// KafkaConfig.valuesWithPrefixOverride): a property marked perListener in
// the catalog is read for listener L from listener.name.<l>.<property>
// (l is L in lower case) when given, else from <property>. One marked
// perMechanism too is read for SASL mechanism M first from
// listener.name.<l>.<m>.<property> (as Kafka reads
// listener.name.<l>.<m>.sasl.jaas.config).

// listenerPrefix is Kafka's prefix of listener name's overrides.
func listenerPrefix(name string) string {
	return "listener.name." + strings.ToLower(name) + "."
}

// listenerProperty returns the catalog property a listener.name.<l>.[<m>.]<property>
// override is of, or nil if name is not one.
func listenerProperty(name string) *property {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return nil
	}
	_, rest, ok = strings.Cut(rest, ".") // the listener name
	if !ok {
		return nil
	}
	if p := propertyByName[rest]; p != nil && p.perListener && p.Name == rest {
		return p
	}
	if _, tail, ok := strings.Cut(rest, "."); ok { // a mechanism prefix
		if p := propertyByName[tail]; p != nil && p.perMechanism && p.Name == tail {
			return p
		}
	}
	return nil
}

// listenerConfig is c as listener sees it, for SASL mechanism mechanism
// ("" for none): each per-listener property set from its override, if
// given. The overrides were checked by ParseConfig; one set in Go that
// does not parse is reported by validateListeners.
func (c *Config) listenerConfig(listener, mechanism string) (Config, []*ConfigError) {
	lc := *c
	var errs []*ConfigError
	prefix := listenerPrefix(listener)
	for i := range properties {
		p := &properties[i]
		if !p.perListener {
			continue
		}
		names := []string{prefix + p.Name}
		if p.perMechanism && mechanism != "" {
			names = append(names, prefix+strings.ToLower(mechanism)+"."+p.Name)
		}
		for _, n := range names { // the more specific last, so it wins
			v, ok := c.ListenerProperties[n]
			if !ok {
				continue
			}
			if err := p.set(&lc, v); err != nil {
				errs = append(errs, &ConfigError{Property: n, Value: v, Reason: err.Error()})
			}
		}
	}
	return lc, errs
}

// validateListeners checks the listener properties together and, for each
// listener, the per-listener properties as that listener sees them.
func (c *Config) validateListeners() []*ConfigError {
	plan, cerr := c.resolveListeners()
	if cerr != nil {
		return []*ConfigError{cerr}
	}
	_, errs := c.buildListeners(plan)
	return errs
}

// buildListeners builds what the protocol server needs to serve each of
// the plan's listeners, less the advertised address, which is known once
// the listener is bound. It reports every problem of every listener.
func (c *Config) buildListeners(plan listenerPlan) ([]*protocol.Listener, []*ConfigError) {
	var out []*protocol.Listener
	var errs []*ConfigError
	for _, spec := range plan.listeners {
		l := &protocol.Listener{Name: spec.name, Protocol: spec.protocol}
		lc, lerrs := c.listenerConfig(spec.name, "")
		errs = append(errs, lerrs...)
		if len(lerrs) > 0 {
			continue
		}
		for _, p := range properties {
			if !p.perListener || p.check == nil {
				continue
			}
			if reason := p.check(&lc); reason != "" {
				errs = append(errs, &ConfigError{Property: listenerPrefix(spec.name) + p.Name, Reason: reason})
			}
		}
		if spec.protocol.UsesTLS() {
			if _, ok := c.ListenerProperties[listenerPrefix(spec.name)+c.propertyName(&c.SSLClientAuth)]; spec.protocol.UsesSASL() && !ok {
				// KIP-684: on SASL_SSL only the listener's own
				// ssl.client.auth applies.
				lc.SSLClientAuth = "none"
			}
			tc, mapper, terrs := lc.serverTLS(spec.name)
			errs = append(errs, terrs...)
			if len(terrs) > 0 {
				continue
			}
			l.TLS, l.Principal = tc, mapper.Map
		}
		if spec.protocol.UsesSASL() {
			sc, serrs := c.serverSASL(spec.name, &lc)
			errs = append(errs, serrs...)
			if len(serrs) > 0 {
				continue
			}
			l.SASL = sc
		}
		out = append(out, l)
	}
	return out, errs
}

// serverSASL builds a SASL listener's mechanisms from lc, the listener's
// view of c: sasl.enabled.mechanisms, for PLAIN the users of its
// PlainLoginModule and for OAUTHBEARER the validator's options of its
// OAuthBearerLoginModule (listener.name.<l>.<m>.sasl.jaas.config, else
// the listener's or the broker's sasl.jaas.config), and each mechanism's
// connections.max.reauth.ms.
func (c *Config) serverSASL(listener string, lc *Config) (*protocol.SASLConfig, []*ConfigError) {
	var errs []*ConfigError
	fail := func(prop *string, reason string) {
		errs = append(errs, &ConfigError{Property: listenerPrefix(listener) + c.propertyName(prop), Reason: reason})
	}
	sc := &protocol.SASLConfig{}
	for _, m := range configdef.SplitList(lc.SASLEnabledMechanisms) {
		if !protocol.SupportedMechanism(m) {
			fail(&c.SASLEnabledMechanisms, fmt.Sprintf("mechanism %s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)", m))
			continue
		}
		if !slices.Contains(sc.Mechanisms, m) {
			sc.Mechanisms = append(sc.Mechanisms, m)
		}
	}
	if len(sc.Mechanisms) == 0 && len(errs) == 0 {
		fail(&c.SASLEnabledMechanisms, "a SASL listener needs at least one mechanism")
	}
	sc.MaxReauth = map[string]time.Duration{}
	for _, m := range sc.Mechanisms {
		mc, merrs := c.listenerConfig(listener, m)
		errs = append(errs, merrs...)
		// connections.max.reauth.ms, per mechanism as Kafka's
		// SaslChannelBuilder reads it.
		if mc.ConnectionsMaxReauthMs > 0 {
			sc.MaxReauth[m] = time.Duration(min(mc.ConnectionsMaxReauthMs, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
		}
		// The mechanism's JAAS entry, for the mechanisms that read one.
		jaas := func(module, need, options string) (jaasEntry, bool) {
			entry, err := parseJAAS(mc.SASLJAASConfig)
			switch {
			case strings.TrimSpace(mc.SASLJAASConfig) == "":
				fail(&c.SASLJAASConfig, fmt.Sprintf("%s needs %s: set %s%s.sasl.jaas.config to %s required%s;", m, need, listenerPrefix(listener), strings.ToLower(m), module, options))
			case err != nil:
				fail(&c.SASLJAASConfig, err.Error())
			default:
				return entry, true
			}
			return entry, false
		}
		var err error
		switch m {
		case protocol.MechanismPlain:
			if entry, ok := jaas(plainLoginModule, "its users", ` user_NAME="PASSWORD"`); ok {
				sc.PlainUsers, err = entry.plainUsers()
			}
		case protocol.MechanismOAuthBearer:
			if entry, ok := jaas(oauthBearerLoginModule, "its login module", ""); ok {
				sc.OAuthBearer, err = entry.oauthBearerValidator()
			}
		}
		if err != nil {
			fail(&c.SASLJAASConfig, err.Error())
		}
	}
	return sc, errs
}
