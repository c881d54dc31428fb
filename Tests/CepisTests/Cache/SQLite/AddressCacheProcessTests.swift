import CepisTestSupport
import Foundation
import Testing

@testable import Cepis

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The cache file shared by processes: the child is `CepisCacheStress`, built beside the test
/// bundle (CepisTests depends on it).
@Suite("AddressCache: several processes, kill -9", .serialized)
struct AddressCacheProcessTests {
  /// The child executable next to the test bundle.
  static func stressTool() throws -> URL {
    let start = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    var folder = start
    for _ in 0..<4 {
      let candidate = folder.appendingPathComponent("CepisCacheStress")
      if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
      folder = folder.deletingLastPathComponent()
    }
    throw CepisError.invalidResponse("CepisCacheStress not found near \(start.path)")
  }

  static func launch(_ arguments: [String]) throws -> (ChildProcess, Pipe, Pipe) {
    let output = Pipe()
    let errors = Pipe()
    let child = try ChildProcess.spawn(
      try stressTool(), arguments, stdout: .pipe(output), stderr: .pipe(errors))
    return (child, output, errors)
  }

  @Test("four processes writing and reading one file at once never see an error")
  func fourProcesses() async throws {
    try await withTemporaryFolder { folder in
      let path = folder.appendingPathComponent("shared/cache.sqlite").path
      let children = try (0..<4).map { try Self.launch(["mix", path, String($0), "40"]) }
      for (process, output, errors) in children {
        async let text = String(
          decoding: ChildProcess.readToEnd(output.fileHandleForReading), as: UTF8.self)
        let complaint = String(
          decoding: await ChildProcess.readToEnd(errors.fileHandleForReading), as: UTF8.self)
        #expect(try await process.termination() == .exited(0))
        #expect(await text == "errors 0\n", "\(complaint)")
        #expect(complaint.isEmpty)
      }
      let store = try openStore(URL(fileURLWithPath: path))
      #expect(try store.statistics().entriesPerEdition["2026-11", default: 0] > 0)
      store.close()
    }
  }

  @Test(
    "kill -9 in the middle of writes: the file stays sound and committed entries stay",
    .enabled(
      if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3"),
      "needs the sqlite3 command-line tool for PRAGMA integrity_check"))
  func killNine() async throws {
    try await withTemporaryFolder { folder in
      let path = folder.appendingPathComponent("cache.sqlite").path
      let (process, output, _) = try Self.launch(["write", path, "1000000"])
      // Read until at least 2,000 CEPs are committed (40 transactions), then kill.
      var committed = 0
      var buffer = ""
      let reader = output.fileHandleForReading
      while committed < 2_000 {
        let data = await ChildProcess.available(reader)
        guard !data.isEmpty else { break }
        buffer += String(decoding: data, as: UTF8.self)
        while let newline = buffer.firstIndex(of: "\n") {
          let line = buffer[..<newline]
          buffer = String(buffer[buffer.index(after: newline)...])
          if line.hasPrefix("committed "), let count = Int(line.dropFirst(10)) {
            committed = count
          }
        }
      }
      process.signal(SIGKILL)
      #expect(try await process.termination() == .signalled(SIGKILL))
      #expect(committed >= 2_000)

      let checkOutput = Pipe()
      let check = try ChildProcess.spawn(
        URL(fileURLWithPath: "/usr/bin/sqlite3"),
        [path, "PRAGMA integrity_check;", "SELECT count(*) FROM entries;"],
        stdout: .pipe(checkOutput))
      let lines = String(
        decoding: await ChildProcess.readToEnd(checkOutput.fileHandleForReading), as: UTF8.self
      ).split(separator: "\n")
      #expect(try await check.termination() == .exited(0))
      #expect(lines.first == "ok")
      let count = lines.count > 1 ? Int(lines[1]) ?? 0 : 0
      #expect(count >= committed)

      let store = try openStore(URL(fileURLWithPath: path))
      let found = try store.entries(for: Array(1_000_000..<1_000_000 + committed), now: Date())
      #expect(found.count == committed)
      #expect(found[1_000_000]?.address?.logradouro == "Rua 1000000")
      store.close()
    }
  }
}
