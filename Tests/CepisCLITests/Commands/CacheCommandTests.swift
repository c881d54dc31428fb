import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

/// The address cache as the `cepis` binary uses it: on by default in the XDG folder, a file
/// named by `--cache` or `CEPIS_CACHE`, off with `--no-cache`; `cepis cache info|clear`.
@Suite("cepis binary: the address cache")
struct CacheCommandTests {
  /// A fresh folder for one test's cache.
  static func folder() throws -> URL {
    let url = FileManager.default.temporaryDirectory
      .appendingPathComponent("cepis-cache-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }

  /// The single CEP lookups (`/01001000`) the server has seen.
  static func lookups(_ server: MockServer) -> Int {
    server.requests.filter { request in
      request.path.utf8.count == 9
        && request.path.utf8.dropFirst().allSatisfy { $0 >= 48 && $0 <= 57 }
    }.count
  }

  @Test(arguments: cliTransports) func aRepeatedLookupCostsNoRequest(transport: Transport.Kind)
    async throws
  {
    let folder = try Self.folder()
    defer { try? FileManager.default.removeItem(at: folder) }
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let url = server.baseURL.absoluteString
        let cache = ["--cache", folder.path + "/"]
        let first = try await CLI.run(
          ["lookup", "--base-url", url, "01001000", "99999999"] + cache)
        #expect(first.status == 1)  // 99999-999 does not exist
        #expect(Self.lookups(server) == 2)
        let second = try await CLI.run(
          ["lookup", "--base-url", url, "01001-000", "99999999"] + cache)
        #expect(second.status == 1 && second.out == first.out && second.err == first.err)
        // Neither the address nor "does not exist" is asked again, nor the edition (within
        // the hour the first run checked it).
        #expect(Self.lookups(server) == 2)
        #expect(server.requests.filter { $0.path == "/health" }.count == 1)

        // --no-cache asks the network.
        let uncached = try await CLI.run(
          ["lookup", "--base-url", url, "01001000", "--no-cache"] + cache)
        #expect(uncached.status == 0 && Self.lookups(server) == 3)

        // A new edition: the cached answers are not fresh any more.
        server.setEdition("2026-12")
        let info = try await CLI.run(
          ["cache", "info", "--base-url", url, "--format", "json"] + cache)
        #expect(info.status == 0)
        #expect(
          info.out.contains(#""entries":2"#) && info.out.contains(#""editions":{"2026-11":2}"#))

        // The file is the user's alone.
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        let file = try #require(files.first { $0.hasSuffix(".sqlite") })
        let attributes = try FileManager.default.attributesOfItem(
          atPath: folder.appendingPathComponent(file).path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
      }
    }
  }

  @Test func theDefaultFolderAndTheEnvironment() async throws {
    let home = try Self.folder()
    defer { try? FileManager.default.removeItem(at: home) }
    try await withMockServer { server in
      let url = server.baseURL.absoluteString
      // CEPIS_CACHE empty: the default folder, under XDG_CACHE_HOME.
      let env = ["CEPIS_CACHE": "", "XDG_CACHE_HOME": home.path]
      _ = try await CLI.run(["lookup", "--base-url", url, "01001000"], env: env)
      _ = try await CLI.run(["lookup", "--base-url", url, "01001000"], env: env)
      #expect(Self.lookups(server) == 1)
      let folder = home.appendingPathComponent("cepis")
      let attributes = try FileManager.default.attributesOfItem(atPath: folder.path)
      #expect((attributes[.posixPermissions] as? Int) == 0o700)
      // Another server's answers are in a file of their own, never the one cep.is's go to.
      let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
      #expect(files.contains { $0.hasPrefix("addresses-127.0.0.1-") && $0.hasSuffix(".sqlite") })
      #expect(!files.contains("addresses.sqlite"))

      // CEPIS_CACHE names a file; CEPIS_CACHE=off turns the cache off.
      let named = home.appendingPathComponent("named.sqlite").path
      _ = try await CLI.run(["lookup", "--base-url", url, "01001000"], env: ["CEPIS_CACHE": named])
      #expect(FileManager.default.fileExists(atPath: named) && Self.lookups(server) == 2)
      _ = try await CLI.run(["lookup", "--base-url", url, "01001000"], env: ["CEPIS_CACHE": named])
      #expect(Self.lookups(server) == 2)
      _ = try await CLI.run(["lookup", "--base-url", url, "01001000"], env: ["CEPIS_CACHE": "off"])
      #expect(Self.lookups(server) == 3)

      // cache clear forgets: the next lookup asks again.
      let clear = try await CLI.run(
        ["cache", "clear", "--base-url", url], env: ["CEPIS_CACHE": named])
      #expect(clear.status == 0 && clear.err.contains("cleared"))
      let info = try await CLI.run(
        ["cache", "info", "--base-url", url], env: ["CEPIS_CACHE": named])
      #expect(info.out.contains("entries: 0"))
      _ = try await CLI.run(["lookup", "--base-url", url, "01001000"], env: ["CEPIS_CACHE": named])
      #expect(Self.lookups(server) == 4)
    }
  }

  @Test func aDamagedFileIsMovedAsideWithOneWarningAndTheLookupStillWorks() async throws {
    let folder = try Self.folder()
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("cache.sqlite")
    try Data(repeating: 0x5A, count: 8_192).write(to: file)
    try await withMockServer { server in
      let result = try await CLI.run(
        ["lookup", "--base-url", server.baseURL.absoluteString, "01001000", "--cache", file.path])
      #expect(result.status == 0 && result.out.contains("Praça da Sé"))
      let warnings = result.err.split(separator: "\n").filter { $0.contains("address cache") }
      #expect(warnings.count == 1, "\(result.err)")
      let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
      #expect(files.contains { $0.hasPrefix("cache.sqlite.corrupt-") })
    }
  }
}
