import BrazilianDocuments

/// Random fault injection, reproducible from a seed.
///
/// For each request on a ``MockRoute`` of cep.is or cpfhub.io (the fallback providers' routes
/// take scripted and mode faults only) the server takes the request's sequence number `index`
/// (0, 1, 2, … in arrival order, counting only those requests) and asks
/// ``fault(forRequestIndex:)``, which depends only on `seed` and `index`: with probability `rate`
/// it picks one fault of ``faults``. CSV-only faults drawn for another route do nothing and are
/// not counted.
public struct MockChaos: Sendable, Hashable {
  /// The seed of the random draws.
  public var seed: UInt64
  /// The probability, between 0 and 1, that a request gets a fault.
  public var rate: Double
  /// The faults drawn from (uniformly). Defaults to ``defaultFaults``.
  public var faults: [MockFault]

  /// The default chaos faults: resets, truncation, a short dribble, 429/500/502/503 statuses,
  /// a captive portal and the row-level CSV faults (none of which produce a wrong row).
  public static let defaultFaults: [MockFault] = [
    .resetBeforeHeaders, .resetAfterHeaders, .truncatedBody, .dribble(gap: 0.001),
    .status(429, retryAfter: "0"), .status(503), .status(500), .status(502), .htmlPortal,
    .csvReordered, .csvOmitMissing, .csvDuplicatedRows, .csvMaskedCEPs, .csvColumnsShuffled,
    .csvBOM, .csvExtraRows,
  ]

  /// Creates a chaos configuration.
  public init(seed: UInt64, rate: Double, faults: [MockFault] = MockChaos.defaultFaults) {
    self.seed = seed
    self.rate = rate
    self.faults = faults
  }

  /// The fault drawn for the request with this sequence number, or `nil` for none.
  public func fault(forRequestIndex index: Int) -> MockFault? {
    guard rate > 0, !faults.isEmpty else { return nil }
    var generator = SplitMix64(state: seed ^ UInt64(truncatingIfNeeded: index))
    let draw = Double(generator.next() >> 11) / Double(UInt64(1) << 53)
    guard draw < rate else { return nil }
    return faults[Int(generator.next() % UInt64(faults.count))]
  }
}
