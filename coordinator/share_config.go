package coordinator

import (
	"time"

	"github.com/kcompatd/kcompatd/coordinator/sharefetch"
	"github.com/kcompatd/kcompatd/internal/vfs"
)

// shareDefaults fills the unset share group settings from d.
func (c *Config) shareDefaults(d Config) {
	set := func(p *int, def int) {
		if *p <= 0 {
			*p = def
		}
	}
	for _, p := range []struct{ v, d *time.Duration }{
		{&c.ConsumerMinSessionTimeout, &d.ConsumerMinSessionTimeout}, {&c.ConsumerMaxSessionTimeout, &d.ConsumerMaxSessionTimeout},
		{&c.ConsumerMinHeartbeatInterval, &d.ConsumerMinHeartbeatInterval}, {&c.ConsumerMaxHeartbeatInterval, &d.ConsumerMaxHeartbeatInterval},
	} {
		if *p.v <= 0 {
			*p.v = *p.d
		}
	}
	if c.ShareSessionTimeout <= 0 {
		c.ShareSessionTimeout = d.ShareSessionTimeout
	}
	if c.ShareMinSessionTimeout <= 0 {
		c.ShareMinSessionTimeout = d.ShareMinSessionTimeout
	}
	if c.ShareMaxSessionTimeout <= 0 {
		c.ShareMaxSessionTimeout = d.ShareMaxSessionTimeout
	}
	if c.ShareHeartbeatInterval <= 0 {
		c.ShareHeartbeatInterval = d.ShareHeartbeatInterval
	}
	if c.ShareMinHeartbeatInterval <= 0 {
		c.ShareMinHeartbeatInterval = d.ShareMinHeartbeatInterval
	}
	if c.ShareMaxHeartbeatInterval <= 0 {
		c.ShareMaxHeartbeatInterval = d.ShareMaxHeartbeatInterval
	}
	if c.ShareRecordLockDuration <= 0 {
		c.ShareRecordLockDuration = d.ShareRecordLockDuration
	}
	if c.ShareMinRecordLockDuration <= 0 {
		c.ShareMinRecordLockDuration = d.ShareMinRecordLockDuration
	}
	if c.ShareMaxRecordLockDuration <= 0 {
		c.ShareMaxRecordLockDuration = d.ShareMaxRecordLockDuration
	}
	set(&c.ShareMaxSize, d.ShareMaxSize)
	set(&c.ShareDeliveryCountLimit, d.ShareDeliveryCountLimit)
	set(&c.ShareMinDeliveryCountLimit, d.ShareMinDeliveryCountLimit)
	set(&c.ShareMaxDeliveryCountLimit, d.ShareMaxDeliveryCountLimit)
	set(&c.SharePartitionMaxRecordLocks, d.SharePartitionMaxRecordLocks)
	set(&c.ShareMinPartitionMaxRecordLocks, d.ShareMinPartitionMaxRecordLocks)
	set(&c.ShareMaxPartitionMaxRecordLocks, d.ShareMaxPartitionMaxRecordLocks)
	set(&c.ShareMaxShareSessions, d.ShareMaxShareSessions)
}

// initShare sets up the group configs, the persister and the share-fetch
// path.
func (c *Coordinator) initShare() error {
	gc, err := newGroupConfigs(vfs.OS{}, c.cfg.GroupConfigDir)
	if err != nil {
		return err
	}
	gc.bounds = c.groupConfigBounds
	c.groupCfgs = gc
	c.persister = c.cfg.SharePersister
	if c.persister == nil {
		c.persister = newMemPersister()
	}
	c.share = sharefetch.NewManager(sharefetch.Config{
		Persister:   c.persister,
		Store:       c.store,
		Clock:       c.clock,
		Settings:    c.shareSettings,
		MaxSessions: c.cfg.ShareMaxShareSessions,
		NodeID:      c.cfg.NodeID,
	})
	return nil
}
