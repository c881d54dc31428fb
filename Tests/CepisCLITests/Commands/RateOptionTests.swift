import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import CepisCommandLine

@Suite("cepis --rate: the client's own rate limit")
struct RateOptionTests {
  @Test(
    "rates read as requests a second or a minute",
    arguments: [
      ("5/s", RateLimit.perSecond(5)), ("2.5/s", .perSecond(2.5)), ("300/min", .perMinute(300)),
      ("12", .perSecond(12)), (" 1/MIN ", .perMinute(1)), ("4/second", .perSecond(4)),
    ])
  func good(text: String, limit: RateLimit) {
    #expect(Context.parseRate(text) == limit)
  }

  @Test(
    "anything else is refused",
    arguments: ["", "0/s", "-3/s", "fast", "5/h", "5/s/s", "nan/s", "inf/min", "/s"])
  func bad(text: String) {
    #expect(Context.parseRate(text) == nil)
  }

  @Test(
    "with --rate 1/min the second lookup fails at once as rate limited, costing no request",
    arguments: cliTransports)
  func oneAMinute(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let ceps = Array(server.dataset.sampleCEPs.prefix(2))
        let result = try await CLI.run(
          [
            "lookup", "--base-url", server.baseURL.absoluteString, "--rate", "1/min",
            "--total-timeout", "5", "--no-cache",
          ] + ceps)
        #expect(result.status != 0)
        #expect(result.err.contains("rate limit"), "\(result.err)")
        #expect(requests(server, on: .cep).count == 1)
      }
    }
  }

  @Test("a bad --rate is a usage error naming the option")
  func usage() async throws {
    let result = try await CLI.run(["lookup", "--rate", "fast", "01001000"])
    #expect(result.status == 2)
    #expect(result.err.contains("option '--rate' needs a rate such as 5/s or 300/min"))
  }
}
