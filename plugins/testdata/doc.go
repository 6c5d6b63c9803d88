// Package testdata holds plugin main packages that the tests of plugins/host
// and plugins/plugintest build and launch: fault-injecting plugins (panic,
// hang, stdoutgarbage, badproto, fatal, warnonly), the trivial plugin the
// benchmarks use, echo (every SDK feature), and bare, a plugin written
// against go-plugin directly that gives the benchmarks their floor; several
// serves three plugins from one process, as the built-ins are served; plugin
// is the plugin audit-trail in a folder named otherwise.
package testdata
