// Package testdata holds plugin main packages that the tests of plugins/host
// and plugins/plugintest build and launch: fault-injecting plugins (panic,
// hang, stdoutgarbage, badproto, fatal, warnonly), the trivial plugin the
// benchmarks use, echo (every SDK feature), and bare, a plugin written
// against go-plugin directly that gives the benchmarks their floor.
package testdata
