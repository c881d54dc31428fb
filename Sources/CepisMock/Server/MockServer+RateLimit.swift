extension MockServer {
  /// Limits the rate of requests on a route, as the real services do, or removes the limit
  /// (`nil`, or a limit with neither part).
  ///
  /// ```swift
  /// server.limitRate(.csv, .tokenBucket(perSecond: 20, burst: 2))
  /// // three requests at once: two answered, the third 429 with `Retry-After: 1`
  /// #expect(server.rateLimitedCount(on: .csv) == 1)
  /// ```
  ///
  /// A request the bucket refuses is answered 429 with a `Retry-After` header and the API's
  /// JSON error body (what ``MockFault/status(_:retryAfter:body:)`` writes on the route); a
  /// request on a blocked route is answered 403 with a short `text/html` page. The limit
  /// stands in front of the route: refused requests take no scripted fault, mode or chaos
  /// draw (see ``MockRateLimit`` for the order of the two parts). Requests are logged in
  /// ``requests`` whether refused or not.
  ///
  /// A new limit replaces the route's previous one and starts with a full bucket and an
  /// empty window. ``reset()`` removes the limits set here (and restores
  /// ``Configuration/rateLimits``). Time is the server's monotonic clock.
  public func limitRate(_ route: MockRoute, _ limit: MockRateLimit?) {
    ledger.limitRate(route, limit)
  }

  /// How many requests on `route` its rate limit answered 429 since the start or the last
  /// ``reset()``.
  public func rateLimitedCount(on route: MockRoute) -> Int {
    ledger.rateLimitCounts(on: route).rateLimited
  }

  /// How many requests on `route` were answered 403 because the route was blocked, since the
  /// start or the last ``reset()``.
  public func blockedCount(on route: MockRoute) -> Int {
    ledger.rateLimitCounts(on: route).blocked
  }

  /// How many requests on `route` the rate limit let through to be answered (with the route's
  /// faults, if any) since the start or the last ``reset()``: every request on the route when
  /// it has no limit.
  ///
  /// With ``rateLimitedCount(on:)`` and ``blockedCount(on:)`` it adds up to every request
  /// received on the route, which ``requests`` cannot always tell (``clearLog()`` and
  /// ``Configuration/maxLogEntries`` drop records).
  public func acceptedCount(on route: MockRoute) -> Int {
    ledger.rateLimitCounts(on: route).accepted
  }
}
