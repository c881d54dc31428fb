import CepisMock
import Foundation
import Testing

@testable import CepisCommandLine

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@Suite("cepis mock --rate-limit")
struct MockRateLimitTests {
  @Test func specsParseAndCombinePerRoute() throws {
    let limits = try MockCommand.parseRateLimits(
      [
        "csv=5/s,burst=5", "viacep=block,after=550,within=7200,for=3600", "viacep=10/s",
        "cep=2/s,retry-after=date", "cep=2/s,burst=2,retry-after=1",
      ], path: ["mock"])
    #expect(limits.count == 3)
    #expect(limits[.csv] == .tokenBucket(perSecond: 5, burst: 5))
    // A rate and a block for one route both apply.
    #expect(
      limits[.viaCEP]
        == MockRateLimit(
          tokenBucket: .init(perSecond: 10, burst: 10),
          block: .init(after: 550, within: 7_200, for: 3_600)))
    // A later rate replaces an earlier one.
    #expect(limits[.cep] == .tokenBucket(perSecond: 2, burst: 2, retryAfter: .seconds(1)))
    #expect(try MockCommand.parseRateLimits([], path: ["mock"]).isEmpty)
  }

  @Test(arguments: [
    "csv", "csv=", "csv=fast", "csv=5/h", "csv=5/s,burst=0", "web=5/s", "5/s",
    "viacep=block,after=550", "viacep=block,after=550,within=7200,for=3600,extra=1",
  ])
  func badSpecsAreUsageErrorsNamingTheOptionAndTheGrammar(spec: String) {
    let error = #expect(throws: UsageError.self) {
      try MockCommand.parseRateLimits(["csv=1/s", spec], path: ["mock"])
    }
    #expect(error?.message.contains("--rate-limit") == true)
    #expect(error?.message.contains("'\(spec)'") == true)
    #expect(error?.message.contains("ROUTE=block,after=N,within=DURATION,for=DURATION") == true)
  }

  @Test func helpDescribesTheOption() {
    let help = Commands.help(for: ["mock"])
    #expect(help.contains("--rate-limit ROUTE=LIMIT"))
    #expect(help.contains("block,after=N,within=DURATION,for=DURATION"))
  }

  @Test func badSpecExitsWithStatus2() async throws {
    let result = try await CLI.run(["mock", "--rate-limit", "csv=lots"])
    #expect(result.status == 2)
    #expect(result.err.contains("--rate-limit"))
    #expect(result.err.contains("'lots' is not a rate"))
  }

  @Test func theRunningMockLimitsAndResetRestoresTheLimits() async throws {
    let directory = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let stdout = directory.appendingPathComponent("mock.out")
    let running = try CLI.start(
      [
        "mock", "--port", "0", "--rate-limit", "health=block,after=1,within=60,for=60",
        "--rate-limit", "cep=0.01/s,burst=1,retry-after=7",
      ], stdoutFile: stdout)
    var url: URL?
    let deadline = Date().addingTimeInterval(30)
    while url == nil && Date() < deadline {
      let text = (try? String(contentsOf: stdout, encoding: .utf8)) ?? ""
      if let line = text.split(separator: "\n").first, text.contains("\n") {
        url = URL(string: String(line))
      }
      try await Task.sleep(nanoseconds: 20_000_000)
    }
    guard let base = url else {
      running.signal(SIGKILL)
      _ = try? await running.wait(timeout: 5)
      Issue.record("cepis mock printed no URL")
      return
    }
    let session = URLSession(configuration: .ephemeral)
    defer { session.invalidateAndCancel() }
    let health = base.appendingPathComponent("health")
    #expect(try await fetch(session, health).status == 200)
    let blocked = try await fetch(session, health)
    #expect(blocked.status == 403)
    #expect(blocked.header("Content-Type")?.hasPrefix("text/html") == true)
    let cep = base.appendingPathComponent("01001000")
    #expect(try await fetch(session, cep).status == 200)
    let limited = try await fetch(session, cep)
    #expect(limited.status == 429)
    #expect(limited.header("Retry-After") == "7")

    var reset = URLRequest(url: base.appendingPathComponent("__mock/reset"))
    reset.httpMethod = "POST"
    #expect(try await fetch(session, reset).status == 200)
    #expect(try await fetch(session, health).status == 200)
    #expect(try await fetch(session, health).status == 403)

    running.signal(SIGTERM)
    #expect(try await running.wait(timeout: 30).status == 0)
  }
}

/// The status and headers of one answer.
private struct Answer {
  var status: Int
  /// The header fields, names lowercased.
  var headers: [String: String]

  func header(_ name: String) -> String? { headers[name.lowercased()] }
}

private func fetch(_ session: URLSession, _ url: URL) async throws -> Answer {
  try await fetch(session, URLRequest(url: url))
}

/// `URLSession.data(for:)` needs macOS 12; the package supports 10.15.
private func fetch(_ session: URLSession, _ request: URLRequest) async throws -> Answer {
  try await withCheckedThrowingContinuation { continuation in
    session.dataTask(with: request) { _, response, error in
      if let http = response as? HTTPURLResponse {
        var headers: [String: String] = [:]
        for case (let name as String, let value as String) in http.allHeaderFields {
          headers[name.lowercased()] = value
        }
        continuation.resume(returning: Answer(status: http.statusCode, headers: headers))
      } else {
        continuation.resume(throwing: error ?? URLError(.badServerResponse))
      }
    }.resume()
  }
}
