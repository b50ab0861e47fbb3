// Package ops gives tpkit's programs their operational surface: an HTTP server
// for /healthz, /livez, /readyz and /metrics, and a context that ends on
// SIGTERM or SIGINT for graceful shutdown. Each program owns its own
// prometheus.Registry; nothing here registers globally.
package ops
