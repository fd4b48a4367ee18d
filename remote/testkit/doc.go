// Package testkit is the root of the project's test kit: what the tests
// use to stand up and drive real hosts, kept apart from the product.
//
//   - testbed boots real systemd hosts (systemd-nspawn containers, one
//     network namespace each, running infersim as the inference service)
//     and writes their inventory, ssh_config and known_hosts;
//   - e2e is the one gate of the end-to-end tests: they skip without
//     BRINGUP_E2E=1 and fail on a missing prerequisite with it;
//   - tbssh connects a test to a testbed host the way bringup itself
//     connects (a managed remote/sshx connection to an ssh_config alias);
//   - stallssh is an SSH server on loopback, in the test's process, that
//     accepts the login and then answers no channel (a host stalled after
//     authentication);
//   - fleetbench measures bringup's fleet on testbed hosts side by side
//     with plain `ssh host journalctl` (run by `cmd/testbed bench`).
//
// The product never imports the test kit: the binary cmd/bringup links
// neither remote/testkit nor the standard testing package, through any
// package, and cmd/bringup's TestLayers fails if it does. Tests
// (_test.go files) and the cmd/testbed tool import it freely.
package testkit
