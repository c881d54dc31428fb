import CPFHub
import Cepis
import CepisMock
import Foundation
import Testing

/// LGPD: CPF lookups never reach the address cache. Both clients run in one process, the CEP
/// client with a file cache on, and the file's bytes (the database and its write-ahead log)
/// are searched for every CPF and name asked.
@Suite("no personal data in the address cache")
struct NoPersonalDataInCacheTests {
  @Test("CPF lookups beside cached CEP lookups leave no CPF nor name in the cache file")
  func noCPFOnDisk() async throws {
    let folder = FileManager.default.temporaryDirectory
      .appendingPathComponent("cepis-lgpd-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("cache.sqlite")
    try await MockServer.withServer(.init(cpfAPIKeys: [key])) { server in
      let transport = try #require(Transport.make(Transport.availableKinds[0]))
      let cache = AddressCache.sqlite(at: url)
      let cep = Client(baseURL: server.baseURL, maxAttempts: 1, transport: transport, cache: cache)
      let cpf = CPFClient(
        apiKey: key, baseURL: server.baseURL, maxAttempts: 1, transport: transport)
      let people = Array(server.dataset.people.prefix(5))
      #expect(people.count == 5)
      var secrets: [String] = []
      for (index, person) in people.enumerated() {
        let found = try await cpf.lookup(person.cpf)
        let digits = Array(person.cpf)
        let masked =
          String(digits[0..<3]) + "." + String(digits[3..<6]) + "." + String(digits[6..<9]) + "-"
          + String(digits[9..<11])
        secrets += [person.cpf, masked, found.name, found.nameUpper]
        let ceps = ["01001000", "20040002", "01310100", "30130010", "40020000"]
        _ = try? await cep.lookup(ceps[index])
      }
      #expect(cache.warnings.isEmpty)
      var bytes = Data()
      for suffix in ["", "-wal"] {
        if let data = FileManager.default.contents(atPath: url.path + suffix) { bytes += data }
      }
      // The file is the one the CEP lookups wrote.
      #expect(bytes.range(of: Data("Praça da Sé".utf8)) != nil)
      for secret in secrets where !secret.isEmpty {
        #expect(bytes.range(of: Data(secret.utf8)) == nil, "a CPF or a name reached the cache")
      }
    }
  }
}
