/// Calls `probe` until `done` holds for what it returned or `limit` has passed, waiting `interval` between calls;
/// returns the last result, for the caller's expectation (which names what never came). For a change that the
/// daemon makes visible some time after the test caused it: a key cut off, a device expired, a gauge that drops.
func poll<T>(
    every interval: Duration = .milliseconds(100), for limit: Duration,
    _ probe: () async throws -> T, until done: (T) -> Bool
) async throws -> T {
    let deadline = ContinuousClock.now + limit
    var result = try await probe()
    while !done(result), ContinuousClock.now < deadline {
        try await Task.sleep(for: interval)
        result = try await probe()
    }
    return result
}
