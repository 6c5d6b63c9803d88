// Package together tests the contrib plugins as kube-aws runs them: every
// contrib plugin built into its own binary and run through initialise over
// the plugin protocol, and their contributions merged with one another and
// with the built-in plugins that make the stacks they change. It holds no
// code besides its tests.
package together
