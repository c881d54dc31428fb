import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

/// The key and full CPFs never reach the tool's output on any error path: every failure
/// `cepis cpf lookup` can meet, with everything it printed searched.
@Suite("cepis never prints the API key or a full CPF in an error")
struct SecretsTests {
  static let secret = "sk-live-CEPIS-9f3b2d7e41"

  @Test(arguments: cliTransports) func everyErrorPathOfCPFLookup(transport: Transport.Kind)
    async throws
  {
    try await CLI.$transport.withValue(transport) {
      let configuration = MockServer.Configuration(cpfAPIKeys: [Self.secret])
      try await withMockServer(configuration) { server in
        let url = server.baseURL.absoluteString
        let person = try #require(server.dataset.people.first)
        let digits = person.cpf
        let formatted =
          "\(digits.prefix(3)).\(digits.dropFirst(3).prefix(3)).\(digits.dropFirst(6).prefix(3))-\(digits.suffix(2))"
        // Each case: the faults scripted on the cpf route, extra arguments, the CPF asked for.
        let unknown = "52998224725"  // valid check digits, not in the sample
        let cases: [(String, [MockFault], [String], String)] = [
          ("429 exhausted", Array(repeating: .status(429, retryAfter: "0"), count: 3), [], digits),
          ("503 exhausted", Array(repeating: .status(503), count: 3), [], digits),
          ("reset", Array(repeating: .resetBeforeHeaders, count: 3), [], digits),
          ("truncated", Array(repeating: .truncatedBody, count: 3), [], digits),
          ("html", [.htmlPortal], [], digits),
          ("wrong shape", [.wrongShapeJSON], [], digits),
          ("success false", [.successFalse], [], digits),
          ("timeout", Array(repeating: .delayHeaders(3), count: 3), ["--timeout", "0.2"], digits),
          (
            "echoing body",
            [.status(500, body: "{\"key\":\"\(Self.secret)\",\"cpf\":\"\(digits)\"}")],
            ["--attempts", "1"], digits
          ),
          ("not found", [], [], unknown),
          ("bad check digits", [], [], "52998224724"),
        ]
        for (name, faults, extra, cpf) in cases {
          server.script(.cpf, faults)
          let result = try await CLI.run(
            ["cpf", "lookup", "--cpfhub-url", url, "--attempts", "3"] + extra + [cpf],
            env: ["CPFHUB_API_KEY": Self.secret])
          #expect(result.status != 0, "\(name) should fail")
          let printed = result.out + result.err
          #expect(!printed.contains(Self.secret), "\(name) printed the key")
          #expect(!printed.contains(digits), "\(name) printed the full CPF")
          #expect(!printed.contains(formatted), "\(name) printed the formatted CPF")
          #expect(!printed.contains(cpf) || cpf.count != 11, "\(name) printed the CPF asked for")
          #expect(!result.err.isEmpty, "\(name) said nothing")
          server.reset()
        }
        // Cleartext to a host that is not loopback: refused before anything is sent.
        let cleartext = try await CLI.run(
          ["cpf", "lookup", "--cpfhub-url", "http://cpfhub.example", digits],
          env: ["CPFHUB_API_KEY": Self.secret])
        #expect(cleartext.status != 0)
        #expect(!(cleartext.out + cleartext.err).contains(Self.secret))
        #expect(!(cleartext.out + cleartext.err).contains(digits))
      }
    }
  }
}
