import Cepis
import CepisHTTP
import CepisMock
import CepisTestSupport
import Foundation
import Testing

@testable import CepisCommandLine

/// `-v`/`--verbose` and `--log-level`: the clients' events on stderr, one line each, on every
/// build.
@Suite("cepis --verbose and --log-level against CepisMock")
struct VerboseTests {
  /// The stderr lines of the log, without the progress line's terminal codes.
  func logLines(_ result: RunResult) -> [String] {
    result.err.split(separator: "\n").map(String.init).filter {
      $0.hasPrefix("cepis: debug: ") || $0.hasPrefix("cepis: trace: ")
    }
  }

  @Test(
    "lookup -v: a 503 then a 200, one line per event, stdout untouched", arguments: cliTransports)
  func serverErrorThenSuccess(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        server.script(.cep, [.status(503)])
        let url = server.baseURL.absoluteString
        let result = try await CLI.run(["lookup", "-v", "--base-url", url, "01001000"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.hasPrefix("01001-000  "))
        let lines = logLines(result)
        let messages = lines.map { line in
          line.dropFirst("cepis: debug: ".count).components(separatedBy: " request_id=")[0]
        }
        #expect(
          messages == [
            "call started", "attempt ended", "retry scheduled", "attempt ended", "answered",
            "call ended",
          ])
        #expect(lines[1].contains("http.response.status_code=503"))
        #expect(lines[2].contains("reason=503"))
        #expect(lines[3].contains("http.response.status_code=200"))
        #expect(lines[5].contains("attempts=2") && lines[5].contains("outcome=success"))
        let ids = Set(
          lines.compactMap { $0.components(separatedBy: "request_id=").last?.prefix(16) })
        #expect(ids.count == 1)
      }
    }
  }

  @Test("--log-level trace adds each attempt's start; an unknown level is a usage error")
  func logLevels() async throws {
    try await withMockServer { server in
      let url = server.baseURL.absoluteString
      let trace = try await CLI.run([
        "lookup", "--log-level", "trace", "--base-url", url, "01001000",
      ])
      #expect(logLines(trace).contains { $0.hasPrefix("cepis: trace: attempt started") })
      let quiet = try await CLI.run([
        "lookup", "--log-level", "info", "--base-url", url, "01001000",
      ])
      #expect(logLines(quiet).isEmpty)
      #expect(quiet.status == 0)
      let none = try await CLI.run(["lookup", "--base-url", url, "01001000"])
      #expect(none.err.isEmpty)
      let wrong = try await CLI.run([
        "lookup", "--log-level", "loud", "--base-url", url, "01001000",
      ])
      #expect(wrong.status == 2)
      #expect(wrong.err.contains("option '--log-level' needs one of trace, debug"))
    }
  }

  @Test("enrich --verbose: each chunk's request and the cache's results", arguments: cliTransports)
  func enrichVerbose(transport: Transport.Kind) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let folder = FileManager.default.temporaryDirectory
          .appendingPathComponent("cepis-verbose-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("in.csv")
        let rows = server.dataset.sampleCEPs.prefix(20).map { "\($0)\n" }.joined()
        try Data(("cep\n" + rows).utf8).write(to: input)
        server.script(.csv, [.status(503)])
        let url = server.baseURL.absoluteString
        let result = try await CLI.run(
          [
            "enrich", "--verbose", "--base-url", url, "--cache",
            folder.appendingPathComponent("cache.sqlite").path, input.path, "-o",
            folder.appendingPathComponent("out.csv").path,
          ])
        #expect(result.status == 0, "\(result.err)")
        let lines = logLines(result)
        #expect(lines.contains { $0.contains("chunk sent") && $0.contains("size=20") })
        #expect(lines.contains { $0.contains("retry scheduled") && $0.contains("endpoint=batch") })
        #expect(lines.contains { $0.contains("cache miss") && $0.contains("count=20") })
        #expect(lines.contains { $0.contains("call ended") && $0.contains("call=lookups_chunk") })
      }
    }
  }
  @Test(
    "on a terminal an event's line clears enrich's progress line, which its next tick draws again")
  func progressLineKept() async throws {
    let console = Console(capturingWithTTY: true)
    let progress = Progress(console: console, total: nil, enabled: true)
    let log = EventLog(console: console, level: "debug")
    let call = CallScope(
      operation: .lookupsChunk, serverAddress: "cep.is", parent: nil, observer: log)
    progress.update(rows: 10)
    call.record(.chunkSent(size: 500))
    // Past the progress line's interval, whatever the machine's speed.
    try await Task.sleep(nanoseconds: UInt64(progress.interval * 1e9) + 50_000_000)
    progress.update(rows: 20)
    let clear = "\r\u{1B}[K"
    let writes = console.capturedErr.components(separatedBy: clear).filter { !$0.isEmpty }
    #expect(writes.count == 3, "\(writes)")
    guard writes.count == 3 else { return }
    #expect(writes[0].hasPrefix("10 rows") && !writes[0].hasSuffix("\n"))
    #expect(writes[1].hasPrefix("cepis: debug: chunk sent request_id="))
    #expect(writes[1].hasSuffix(" size=500\n"))
    #expect(writes[2].hasPrefix("20 rows") && !writes[2].hasSuffix("\n"))
  }
}
