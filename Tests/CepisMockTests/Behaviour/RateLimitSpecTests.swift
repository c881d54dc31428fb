import Testing

@testable import CepisMock

extension MockTests {
  /// The rate-limit specification strings of the control endpoint and `cepis mock`.
  @Suite struct RateLimitSpecTests {
    @Test(arguments: [
      ("5/s", MockRateLimit.tokenBucket(perSecond: 5, burst: 5)),
      ("5/s,burst=2", .tokenBucket(perSecond: 5, burst: 2)),
      ("2/s,burst=2,retry-after=1", .tokenBucket(perSecond: 2, burst: 2, retryAfter: .seconds(1))),
      ("2/s,retry-after=date", .tokenBucket(perSecond: 2, burst: 2, retryAfter: .httpDate)),
      (
        " 0.5/S , Retry_After = 0 ", .tokenBucket(perSecond: 0.5, burst: 1, retryAfter: .seconds(0))
      ),
      ("30/min", .tokenBucket(perSecond: 0.5, burst: 1)),
      ("90/min,burst=3", .tokenBucket(perSecond: 1.5, burst: 3)),
      ("2.5/s", .tokenBucket(perSecond: 2.5, burst: 3)),
      ("block,after=550,within=7200,for=3600", .block(after: 550, within: 7_200, for: 3_600)),
      ("BLOCK,for=1h,within=2h,after=550", .block(after: 550, within: 7_200, for: 3_600)),
      ("block,after=3,within=90s,for=30min", .block(after: 3, within: 90, for: 1_800)),
      ("block,after=1,within=0.5,for=0.25", .block(after: 1, within: 0.5, for: 0.25)),
    ])
    func goodSpecs(spec: String, expected: MockRateLimit) throws {
      #expect(try MockRateLimit.parse(spec) == expected)
    }

    @Test(arguments: [
      "", "fast", "5", "5/h", "0/s", "-1/s", "inf/s", "nan/s", "/s", "5/s,burst=0",
      "5/s,burst=1.5", "5/s,burst=", "5/s,retry-after=soon", "5/s,retry-after=-1",
      "5/s,colour=red", "5/s,burst=2,burst=3", "5/s,burst", "5/s,after=3",
      "block", "block,after=3,within=60", "block,after=0,within=60,for=60",
      "block,after=3,within=0,for=60", "block,after=3,within=60,for=-1",
      "block,after=3,within=60,for=2d", "block,after=3,within=60,for=60,burst=2",
    ])
    func badSpecs(spec: String) {
      #expect(throws: MockRateLimitSpecError.self) { try MockRateLimit.parse(spec) }
    }

    @Test func routedSpecs() throws {
      let csv = try MockRateLimit.parse(routed: "csv=5/s,burst=5")
      #expect(csv.route == .csv)
      #expect(csv.limit == .tokenBucket(perSecond: 5, burst: 5))
      let viaCEP = try MockRateLimit.parse(routed: "ViaCEP=block,after=550,within=7200,for=3600")
      #expect(viaCEP.route == .viaCEP)
      #expect(viaCEP.limit == .block(after: 550, within: 7_200, for: 3_600))
      #expect(try MockRateLimit.parse(routed: "brasilapi=1/s").route == .brasilAPI)
      #expect(throws: MockRateLimitSpecError.self) { try MockRateLimit.parse(routed: "5/s") }
      #expect(throws: MockRateLimitSpecError.self) { try MockRateLimit.parse(routed: "web=5/s") }
      #expect(throws: MockRateLimitSpecError.self) { try MockRateLimit.parse(routed: "csv=") }
      let unknown = #expect(throws: MockRateLimitSpecError.self) {
        try MockRateLimit.parse(routed: "web=5/s")
      }
      #expect(unknown?.description.contains("viacep") == true)
    }
  }
}
