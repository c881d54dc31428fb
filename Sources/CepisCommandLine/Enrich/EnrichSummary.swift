import Cepis
import CepisSupport
import Foundation

/// What an `enrich` run counts as it writes rows, for its summary and its exit status.
struct EnrichTally {
  var rows = 0
  var found = 0
  var notFound = 0
  var invalid = 0
  var errors = 0
  var blank = 0
  var padded = 0
  var unencodable = 0
  /// Rows of an earlier run that `--resume` skipped.
  var skipped = 0

  /// Counts one row written with `status`.
  mutating func count(_ status: EnrichStatus) {
    rows += 1
    switch status {
    case .found: found += 1
    case .notFound: notFound += 1
    case .invalid: invalid += 1
    case .failed: errors += 1
    case .blank: blank += 1
    case .unencodable: unencodable += 1
    }
  }
}

/// An `enrich` run's summary: one line on stderr, or one JSON object (`--format json`).
struct EnrichSummary {
  var tally: EnrichTally
  var statistics: LookupStatistics
  /// Distinct valid CEPs in the rows read.
  var distinct: Int
  var memoCapacity: Int
  var cached: Bool
  var elapsed: TimeInterval

  /// The fewest requests the rows read could have cost: ⌈distinct valid CEPs the cache did
  /// not answer ÷ 500⌉.
  var minimumRequests: Int {
    let asked = max(0, distinct - statistics.cacheHits)
    return (asked + Client.maxBatch - 1) / Client.maxBatch
  }

  /// `{"enrich": {...}}`.
  var json: JSONValue {
    let rateLimit = statistics.rateLimit
    var fields: [(String, JSONValue)] = [
      ("rows", .int(tally.rows)), ("found", .int(tally.found)),
      ("not_found", .int(tally.notFound)), ("invalid", .int(tally.invalid)),
      ("errors", .int(tally.errors)), ("blank", .int(tally.blank)),
      ("padded", .int(tally.padded)), ("unencodable", .int(tally.unencodable)),
      ("requests", .int(statistics.requests)), ("minimum_requests", .int(minimumRequests)),
      ("distinct_ceps", .int(distinct)), ("memo_capacity", .int(memoCapacity)),
      ("memo_evictions", .int(statistics.memoEvictions)),
      ("cache_hits", .int(statistics.cacheHits)),
      ("rate_limited", .int(rateLimit.refusals)), ("rate_limit_pauses", .int(rateLimit.pauses)),
      ("rate_limit_paused_seconds", .double(Self.milliseconds(rateLimit.pausedSeconds))),
      ("seconds", .double(Self.milliseconds(elapsed))),
    ]
    if tally.skipped > 0 { fields.append(("resumed_after", .int(tally.skipped))) }
    return .object([("enrich", .object(fields))])
  }

  /// `enrich: N rows, …`.
  var line: String {
    var line =
      "enrich: \(tally.rows) rows, \(tally.found) found, \(tally.notFound) not found, "
      + "\(tally.invalid) invalid, \(tally.errors) errors"
    if tally.blank > 0 { line += ", \(tally.blank) blank" }
    if tally.padded > 0 { line += ", \(tally.padded) read as 7 digits with a leading 0" }
    if tally.unencodable > 0 { line += ", \(tally.unencodable) unencodable in Windows-1252" }
    line += ", requests \(statistics.requests) (minimum \(minimumRequests))"
    if cached { line += ", cache hits \(statistics.cacheHits)" }
    let rateLimit = statistics.rateLimit
    if rateLimit.refusals > 0 {
      line +=
        ", rate limited \(rateLimit.refusals) times (429), paused \(rateLimit.pauses) times for "
        + String(format: "%.1f s", rateLimit.pausedSeconds)
    }
    line += ", \(String(format: "%.1f", elapsed)) s"
    if tally.skipped > 0 { line += " (resumed after \(tally.skipped) rows)" }
    return line
  }

  /// `seconds` rounded to the millisecond.
  private static func milliseconds(_ seconds: Double) -> Double {
    (seconds * 1_000).rounded() / 1_000
  }
}
