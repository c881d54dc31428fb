import Foundation

/// The error thrown by ``MockRateLimit/parse(_:)`` for a malformed rate-limit specification.
package struct MockRateLimitSpecError: Error, CustomStringConvertible, Sendable, Equatable {
  /// What was wrong.
  package var description: String
}

extension MockRateLimit {
  /// Parses a rate-limit specification, as the control endpoint and `cepis mock
  /// --rate-limit` take it (after `ROUTE=`).
  ///
  /// `package`: the syntax is documented for the control endpoint and the command line (the
  /// CepisMock article); a Swift test builds ``MockRateLimit`` values directly.
  ///
  /// A comma-separated list: a head, then `key=value` options in any order. Keys are
  /// case-insensitive and `-`/`_` are ignored.
  ///
  /// | Specification | Limit |
  /// |---|---|
  /// | `RATE[,burst=N][,retry-after=SECONDS\|date]` | ``tokenBucket(perSecond:burst:retryAfter:)`` |
  /// | `block,after=N,within=DURATION,for=DURATION` | ``block(after:within:for:)`` |
  ///
  /// `RATE` is a number of requests `/s` or `/min` (`5/s`, `0.5/s`, `30/min`). `burst`
  /// defaults to the requests of one second rounded up, at least 1 (`5/s` → 5, `30/min` → 1).
  /// `retry-after` is a whole number of seconds, or `date` for an HTTP-date; left out, it is
  /// the whole seconds until the next token. `DURATION` is seconds, or a number with `s`,
  /// `min` or `h` (`7200`, `2h`). All three block options are needed.
  package static func parse(_ spec: String) throws(MockRateLimitSpecError) -> MockRateLimit {
    let items = spec.split(separator: ",", omittingEmptySubsequences: false).map {
      $0.trimmingCharacters(in: .whitespaces)
    }
    guard let head = items.first, !head.isEmpty else {
      throw MockRateLimitSpecError(description: "empty rate limit")
    }
    var options: [String: String] = [:]
    for item in items.dropFirst() {
      guard let equals = item.firstIndex(of: "="),
        !item[item.index(after: equals)...].trimmingCharacters(in: .whitespaces).isEmpty
      else {
        throw MockRateLimitSpecError(description: "'\(item)' is not key=value")
      }
      let key = normalizedKey(item[..<equals])
      guard options[key] == nil else {
        throw MockRateLimitSpecError(description: "'\(item[..<equals])' given twice")
      }
      options[key] = item[item.index(after: equals)...].trimmingCharacters(in: .whitespaces)
    }
    if head.lowercased() == "block" {
      return try parseBlock(options)
    }
    return try parseBucket(rate: head, options)
  }

  /// Parses `ROUTE=LIMIT` (`csv=5/s,burst=5`, `viacep=block,after=550,within=2h,for=1h`):
  /// the route is a ``MockRoute`` raw value, case-insensitive.
  package static func parse(
    routed spec: String
  ) throws(MockRateLimitSpecError) -> (route: MockRoute, limit: MockRateLimit) {
    guard let equals = spec.firstIndex(of: "=") else {
      throw MockRateLimitSpecError(description: "no ROUTE= before the limit")
    }
    let name = spec[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
    guard let route = MockRoute(rawValue: name) else {
      let names = MockRoute.allCases.map(\.rawValue).joined(separator: ", ")
      throw MockRateLimitSpecError(description: "unknown route '\(name)' (one of \(names))")
    }
    return (route, try parse(String(spec[spec.index(after: equals)...])))
  }

  private static func parseBucket(
    rate: String, _ options: [String: String]
  ) throws(MockRateLimitSpecError) -> MockRateLimit {
    for key in options.keys where key != "burst" && key != "retryafter" {
      throw MockRateLimitSpecError(description: "unknown option '\(key)' for a rate")
    }
    let perSecond = try parseRate(rate)
    var burst = max(1, Int(min(perSecond, 1e9).rounded(.up)))
    if let text = options["burst"] {
      guard let value = Int(text), value >= 1 else {
        throw MockRateLimitSpecError(
          description: "burst needs a whole number from 1, not '\(text)'")
      }
      burst = value
    }
    var retryAfter = RetryAfter.untilNextToken
    if let text = options["retryafter"] {
      if text.lowercased() == "date" {
        retryAfter = .httpDate
      } else if let seconds = Int(text), seconds >= 0 {
        retryAfter = .seconds(seconds)
      } else {
        throw MockRateLimitSpecError(
          description: "retry-after needs whole seconds or 'date', not '\(text)'")
      }
    }
    return .tokenBucket(perSecond: perSecond, burst: burst, retryAfter: retryAfter)
  }

  private static func parseBlock(
    _ options: [String: String]
  ) throws(MockRateLimitSpecError) -> MockRateLimit {
    for key in options.keys where !["after", "within", "for"].contains(key) {
      throw MockRateLimitSpecError(description: "unknown option '\(key)' for a block")
    }
    guard let afterText = options["after"], let withinText = options["within"],
      let forText = options["for"]
    else {
      throw MockRateLimitSpecError(description: "a block needs after=N,within=SECONDS,for=SECONDS")
    }
    guard let after = Int(afterText), after >= 1 else {
      throw MockRateLimitSpecError(
        description: "after needs a whole number from 1, not '\(afterText)'")
    }
    return .block(
      after: after, within: try parseDuration(withinText, name: "within"),
      for: try parseDuration(forText, name: "for"))
  }

  /// `5/s`, `0.5/s`, `30/min` → requests per second.
  private static func parseRate(_ text: String) throws(MockRateLimitSpecError) -> Double {
    let lowered = text.lowercased()
    let units: [(suffix: String, seconds: Double)] = [("/s", 1), ("/min", 60)]
    for unit in units where lowered.hasSuffix(unit.suffix) {
      let number = lowered.dropLast(unit.suffix.count).trimmingCharacters(in: .whitespaces)
      guard let count = Double(number), count > 0, count.isFinite else { break }
      return count / unit.seconds
    }
    throw MockRateLimitSpecError(
      description: "'\(text)' is not a rate: a positive number with /s or /min (5/s, 30/min)"
        + ", or 'block'")
  }

  /// `7200`, `7200s`, `120min`, `2h` → seconds.
  private static func parseDuration(
    _ text: String, name: String
  ) throws(MockRateLimitSpecError) -> Double {
    let lowered = text.lowercased()
    let units: [(suffix: String, seconds: Double)] = [("min", 60), ("h", 3_600), ("s", 1)]
    var number = Substring(lowered)
    var scale = 1.0
    if let unit = units.first(where: { lowered.hasSuffix($0.suffix) }) {
      number = number.dropLast(unit.suffix.count)
      scale = unit.seconds
    }
    guard let value = Double(number.trimmingCharacters(in: .whitespaces)), value > 0,
      (value * scale).isFinite
    else {
      throw MockRateLimitSpecError(
        description: "\(name) needs a positive duration (seconds, or with s, min or h), "
          + "not '\(text)'")
    }
    return value * scale
  }

  private static func normalizedKey(_ key: Substring) -> String {
    String(key.lowercased().filter { $0 != "-" && $0 != "_" && $0 != " " })
  }
}
