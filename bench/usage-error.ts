// A usage error of `vc-harness bench`: bad arguments, an invalid profile, a host not named with --allow-host.
// The CLI recognises it by name like a configuration error: it prints the message and exits with code 2.

export class BenchUsageError extends Error {
  override name = 'ConfigError'
}
