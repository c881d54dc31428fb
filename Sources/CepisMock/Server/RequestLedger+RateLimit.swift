import Foundation

extension RequestLedger {
  /// Sets or removes a route's rate limit (see ``MockServer/limitRate(_:_:)``): a new limit
  /// starts with a full bucket and an empty window.
  func limitRate(_ route: MockRoute, _ limit: MockRateLimit?) {
    state.withLock { state in
      if let limit, !limit.isEmpty {
        state.limiters[route] = RateLimiter(limit)
      } else {
        state.limiters[route] = nil
      }
    }
  }

  /// The route's rate-limit counts since the start or the last ``reset()``.
  func rateLimitCounts(on route: MockRoute) -> RateLimitCounts {
    state.withLock { $0.limitCounts[route] ?? RateLimitCounts() }
  }

  /// Puts a request on `route` to the route's limit, if it has one, and counts the outcome:
  /// `nil` when the request goes on to be answered. A refusal is also counted in
  /// ``MockServer/faultCounts``, as `rateLimited` or `blocked`. `now` (monotonic seconds) is
  /// read only for a limited route; `wallClock` dates a `Retry-After` HTTP-date.
  static func refusal(
    _ state: inout State, route: MockRoute, now: () -> Double, wallClock: Date
  ) -> RateRefusal? {
    let decision = state.limiters[route]?.admit(at: now()) ?? .accepted
    switch decision {
    case .accepted:
      state.limitCounts[route, default: RateLimitCounts()].accepted += 1
      return nil
    case .rateLimited(let wait):
      state.limitCounts[route, default: RateLimitCounts()].rateLimited += 1
      state.faultCounts["rateLimited", default: 0] += 1
      let retryAfter = state.limiters[route]?.limit.tokenBucket?.retryAfter ?? .untilNextToken
      return .rateLimited(retryAfter: retryAfter.headerValue(wait: wait, now: wallClock))
    case .blocked:
      state.limitCounts[route, default: RateLimitCounts()].blocked += 1
      state.faultCounts["blocked", default: 0] += 1
      return .blocked
    }
  }

  /// `POST /__mock/rate-limit` with `{"route":"csv","limit":"5/s,burst=5"}`: sets the route's
  /// limit from one specification (``MockRateLimit/parse(_:)``) or a list of them (combined);
  /// `"limit":null`, `""`, `[]` or no `"limit"` removes it.
  func controlRateLimit(_ request: MockHTTPRequest) -> Response {
    func reply(_ status: Int, _ body: [UInt8]) -> Response {
      Response(status: status, contentType: jsonType, body: .bytes(body))
    }
    func fail(_ text: String) -> Response {
      reply(400, jsonObject(["ok": .bool(false), "mensagem": .string(text)]))
    }
    guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)),
      let dictionary = object as? [String: Any]
    else {
      return fail(#"Corpo esperado: {"route":"csv","limit":"5/s,burst=5"}"#)
    }
    guard let routeName = dictionary["route"] as? String,
      let route = MockRoute(rawValue: routeName)
    else {
      return fail("route deve ser cep, csv, health, cpf, viacep ou brasilapi")
    }
    let specs: [String]
    switch dictionary["limit"] {
    case nil, is NSNull: specs = []
    case let text as String: specs = [text]
    case let list as [Any]:
      guard let texts = list as? [String] else { return fail("limit deve ser texto ou lista") }
      specs = texts
    default: return fail("limit deve ser texto ou lista")
    }
    var limit = MockRateLimit()
    do {
      for spec in specs where !spec.trimmingCharacters(in: .whitespaces).isEmpty {
        limit = limit.combined(with: try MockRateLimit.parse(spec))
      }
    } catch {
      return fail("\(error)")
    }
    limitRate(route, limit)
    return reply(200, jsonObject(["ok": .bool(true), "limited": .bool(!limit.isEmpty)]))
  }
}
