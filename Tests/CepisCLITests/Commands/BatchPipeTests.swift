import Cepis
import CepisMock
import CepisTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `cepis batch` fed by a producer that pauses (`tail -f … | cepis batch`): the lines read
/// are answered, and the answers written out, while the producer is quiet — not when its
/// next lines or its end come.
@Suite("cepis batch from a pipe that pauses")
struct BatchPipeTests {
  /// The `input=status` of each NDJSON line.
  static func statuses(_ lines: [String]) -> [String] {
    lines.map { line in
      let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      return (object?["input"] as? String ?? "?") + "=" + (object?["status"] as? String ?? "?")
    }
  }

  /// The lines of a child's stdout, read as they come.
  final class OutputLines {
    private let handle: FileHandle
    private var pending = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next `count` lines; fewer when the output ends first.
    func next(_ count: Int) async -> [String] {
      var lines: [String] = []
      while lines.count < count {
        if let newline = pending.firstIndex(of: 10) {
          lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
          pending = Data(pending[(newline + 1)...])
          continue
        }
        let more = await ChildProcess.available(handle)
        if more.isEmpty { break }
        pending.append(more)
      }
      return lines
    }
  }

  /// Three lines, then a pause with the pipe open: their answers come during it, from one
  /// request of the two distinct CEPs; two more lines, another pause, their answers; then the
  /// end of the input ends the run with the status of its worst answer. A watchdog kills the
  /// process after 30 s, so a batch that holds its answers until the input ends fails here
  /// (its output ends short) instead of hanging.
  @Test(arguments: cliTransports) func answersComeWhileTheProducerIsQuiet(
    transport: Transport.Kind
  ) async throws {
    try await CLI.$transport.withValue(transport) {
      try await withMockServer { server in
        let input = Pipe()
        let output = Pipe()
        let child = try ChildProcess.spawn(
          try CLI.requireBinary(),
          ["batch", "--base-url", server.baseURL.absoluteString, "--format", "ndjson"],
          environment: CLI.environment([:]), stdin: .pipe(input), stdout: .pipe(output))
        let watchdog = Task {
          try await Task.sleep(nanoseconds: 30_000_000_000)
          child.signal(SIGKILL)
        }
        defer { watchdog.cancel() }
        let producer = input.fileHandleForWriting
        let lines = OutputLines(output.fileHandleForReading)

        producer.write(Data("10000001\n01001-000\n10000001\n".utf8))
        let first = await lines.next(3)
        #expect(Self.statuses(first) == ["10000001=ok", "01001-000=ok", "10000001=ok"])
        #expect(child.exited() == nil, "the process ended while its input was open")
        let csv = server.requests.filter { $0.path.hasSuffix("/csv") }
        #expect(csv.count == 1)
        #expect(
          Set((csv.first?.queryItems["ceps"] ?? "").split(separator: ",")) == [
            "10000001", "01001000",
          ])

        producer.write(Data("abc\n10000009\n".utf8))
        let second = await lines.next(2)
        #expect(Self.statuses(second) == ["abc=invalid", "10000009=not_found"])
        #expect(child.exited() == nil, "the process ended while its input was open")

        try producer.close()
        #expect(await lines.next(1).isEmpty)
        #expect(try await child.termination() == .exited(1))
        #expect(server.requests.filter { $0.path.hasSuffix("/csv") }.count == 2)
      }
    }
  }
}
