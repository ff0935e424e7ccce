// Package panics keeps a panic in a background task from ending the
// process silently: the task's run is logged and abandoned, and the
// caller decides what comes next (the next run of a periodic task, as
// Kafka's KafkaScheduler logs an uncaught exception of a scheduled task
// and keeps its schedule).
package panics

import (
	"fmt"
	"runtime/debug"

	"github.com/rs/zerolog"
)

// Log recovers a panic of the calling goroutine and logs it at Error with
// msg and the stack. REQUIRES: deferred directly (defer panics.Log(...)),
// or recover sees nothing.
func Log(logger zerolog.Logger, msg string) {
	if r := recover(); r != nil {
		logger.Error().Str("panic", fmt.Sprint(r)).Bytes("stack", debug.Stack()).Msg(msg)
	}
}

// Run runs f, logging and swallowing a panic in it (Log).
func Run(logger zerolog.Logger, msg string, f func()) {
	defer Log(logger, msg)
	f()
}
