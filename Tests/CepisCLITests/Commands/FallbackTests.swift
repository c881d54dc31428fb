import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import CepisCommandLine

@Suite("cepis lookup --fallback: parsing and output")
struct FallbackOptionTests {
  func parse(_ list: String) throws(UsageError) -> [Fallback] {
    try FallbackOptions.parse(list, origin: "option '--fallback'", path: ["lookup"])
  }

  @Test func namesOrderAndURLs() throws {
    #expect(try parse("viacep,brasilapi") == [.viaCEP(), .brasilAPI()])
    #expect(try parse(" BrasilAPI , ViaCEP ") == [.brasilAPI(), .viaCEP()])
    #expect(try parse("none") == [])
    let url = try #require(URL(string: "http://127.0.0.1:8080"))
    #expect(
      try parse("viacep=http://127.0.0.1:8080,brasilapi")
        == [.viaCEP(baseURL: url), .brasilAPI()])
  }

  @Test(
    "mistakes are usage errors that say what is wrong",
    arguments: [
      ("viacpe", "did you mean 'viacep'?"), ("viacep,viacep", "listed twice"),
      ("viacep=ftp://x", "invalid URL"), ("brasilapi=not a url", "invalid URL"),
      ("viacep,,brasilapi", "empty provider name"), ("cepis", "unknown provider 'cepis'"),
    ])
  func mistakes(list: String, message: String) {
    do {
      _ = try parse(list)
      Issue.record("'\(list)' was accepted")
    } catch {
      #expect(error.message.contains(message), "\(error.message)")
      #expect(error.message.hasPrefix("option '--fallback': "))
      #expect(error.path == ["lookup"])
    }
  }

  @Test func fallbackAnswersAreMarkedInEveryFormat() {
    let address = Address(
      cep: "01001000", logradouro: "Praça da Sé", bairro: "Sé", localidade: "São Paulo",
      uf: "SP", geo: Geo(lat: -23.5, lon: -46.6, raioM: 0, precisao: ""), source: .brasilAPI)
    let result = CEPResult(input: "01001000", resolution: .found(address))
    #expect(
      result.textLine()
        == "01001-000  Praça da Sé, Sé, São Paulo/SP [-23.5, -46.6]  (from BrasilAPI)")
    #expect(result.jsonText.contains(#""source":"brasilAPI""#))
    #expect(result.csvText.hasSuffix(",brasilAPI\r\n"))
    let missing = CEPResult(input: "10000009", resolution: .notFound)
    #expect(missing.jsonText.contains(#""source":null"#))
    #expect(missing.csvText.hasSuffix(",,,,,,,,,\r\n"))
  }
}

@Suite("cepis lookup --fallback against CepisMock")
struct FallbackEndToEndCLITests {
  @Test(arguments: cliTransports) func cepisDownViaCEPAnswers(transport: Transport.Kind)
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        server.setMode(.cep, [.status(503)])
        let url = server.baseURL.absoluteString
        let text = try await CLI.run([
          "lookup", "--base-url", url, "--attempts", "1", "--fallback",
          "viacep=\(url),brasilapi=\(url)", "01001000",
        ])
        #expect(text.status == 0, "\(text.err)")
        let sample = try #require(server.dataset.address(for: "01001000"))
        #expect(text.out.hasPrefix("01001-000  \(sample.logradouro)"))
        #expect(text.out.hasSuffix("  (from ViaCEP)\n"))
        #expect(server.requests.filter { $0.route == .viaCEP }.count == 1)
        #expect(server.requests.filter { $0.route == .brasilAPI }.isEmpty)

        let json = try await CLI.run([
          "lookup", "--base-url", url, "--attempts", "1", "--format", "json", "--fallback",
          "brasilapi=\(url)", "01001000",
        ])
        #expect(json.status == 0)
        let array = try JSONSerialization.jsonObject(with: json.stdout) as? [[String: Any]]
        #expect(array?.first?["source"] as? String == "brasilAPI")
        #expect(array?.first?["localidade"] as? String == sample.localidade)

        // cep.is back: its own answers say so.
        server.setMode(.cep, [])
        let back = try await CLI.run([
          "lookup", "--base-url", url, "--format", "ndjson", "--fallback", "viacep=\(url)",
          "01001000",
        ])
        #expect(back.out.contains(#""source":"cepis""#))
        #expect(!back.out.contains("(from"))
      }
    }
  }

  @Test(arguments: cliTransports) func environmentAndNone(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        server.setMode(.cep, [.status(503)])
        let url = server.baseURL.absoluteString
        let env = ["CEPIS_BASE_URL": url, "CEPIS_FALLBACK": "brasilapi=\(url)"]
        let fromEnv = try await CLI.run(["lookup", "--attempts", "1", "01001000"], env: env)
        #expect(fromEnv.status == 0)
        #expect(fromEnv.out.hasSuffix("  (from BrasilAPI)\n"))

        // `--fallback none` overrides the environment: cep.is's own failure, exit 3.
        let none = try await CLI.run(
          ["lookup", "--attempts", "1", "--fallback", "none", "01001000"], env: env)
        #expect(none.status == 3)
        #expect(none.err.contains("server error 503"))
        #expect(server.requests.filter { $0.route == .brasilAPI }.count == 1)

        let bad = try await CLI.run(
          ["lookup", "01001000"], env: ["CEPIS_BASE_URL": url, "CEPIS_FALLBACK": "viacep,oops"])
        #expect(bad.status == 2)
        #expect(bad.err.contains("CEPIS_FALLBACK: unknown provider 'oops'"))
      }
    }
  }

  @Test(arguments: cliTransports) func everySourceFailsOrSaysNotFound(transport: Transport.Kind)
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        server.setMode(.cep, [.status(503)])
        server.setMode(.viaCEP, [.status(502)])
        server.setMode(.brasilAPI, [.brasilAPIOutage])
        let url = server.baseURL.absoluteString
        let fallback = ["--fallback", "viacep=\(url),brasilapi=\(url)"]
        let failed = try await CLI.run(
          ["lookup", "--base-url", url, "--attempts", "1"] + fallback + ["01001000"])
        #expect(failed.status == 3)
        #expect(failed.err.contains("server error 503"))  // cep.is's error, not a fallback's

        server.setMode(.viaCEP, [])
        let missing = try await CLI.run(
          ["lookup", "--base-url", url, "--attempts", "1"] + fallback + ["10000009"])
        #expect(missing.status == 1)
        #expect(missing.err.contains("CEP 10000-009 not found"))
      }
    }
  }

  @Test(arguments: cliTransports) func hedgeAfter(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        server.script(.cep, [.delayHeaders(30)])
        let url = server.baseURL.absoluteString
        let start = Date()
        let result = try await CLI.run(
          [
            "lookup", "--base-url", url, "--timeout", "60", "--fallback", "viacep=\(url)",
            "--hedge-after", "0.2", "01001000",
          ], timeout: 25)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.hasSuffix("  (from ViaCEP)\n"))
        #expect(Date().timeIntervalSince(start) < 20)
        // The slow cep.is request's connection was closed, not left to finish.
        let deadline = Date().addingTimeInterval(10)
        while !server.requests.contains(where: { $0.route == .cep && $0.clientClosed }),
          Date() < deadline
        {
          try await Task.sleep(nanoseconds: 20_000_000)
        }
        #expect(server.requests.contains { $0.route == .cep && $0.clientClosed })
      }
    }
  }

  @Test func hedgeAfterUsageErrors() async throws {
    let alone = try await CLI.run(["lookup", "--hedge-after", "0.5", "01001000"])
    #expect(alone.status == 2)
    #expect(alone.err.contains("needs fallbacks"))
    let negative = try await CLI.run([
      "lookup", "--fallback", "viacep", "--hedge-after", "-1", "01001000",
    ])
    #expect(negative.status == 2)
    #expect(negative.err.contains("'--hedge-after' needs a number of seconds"))
    let help = try await CLI.run(["lookup", "--help"])
    #expect(help.out.contains("--fallback LIST"))
    #expect(help.out.contains("--hedge-after SECONDS"))
    #expect(help.out.contains("CEPIS_FALLBACK"))
  }
}
