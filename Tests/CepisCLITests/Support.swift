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

/// The result of one run of the `cepis` binary.
struct RunResult {
  var status: Int32
  var stdout: Data
  var stderr: Data

  var out: String { String(decoding: stdout, as: UTF8.self) }
  var err: String { String(decoding: stderr, as: UTF8.self) }
  var outLines: [String] {
    out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
  }
}

struct CLIError: Error, CustomStringConvertible {
  var description: String
}

/// Runs the built `cepis` executable as a process, with a hard timeout.
enum CLI {
  /// The package root, found by walking up from this file.
  static let packageRoot: URL = {
    var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    while url.path != "/" {
      if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
        return url
      }
      url.deleteLastPathComponent()
    }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
  }()

  /// The `cepis` binary: next to the test bundle, or `.build/debug/cepis` in the package.
  static let binary: URL? = {
    var candidates: [URL] = []
    let me = URL(fileURLWithPath: CommandLine.arguments[0])
    var directory = me.deletingLastPathComponent()
    for _ in 0..<4 {
      candidates.append(directory.appendingPathComponent("cepis"))
      directory.deleteLastPathComponent()
    }
    candidates.append(packageRoot.appendingPathComponent(".build/debug/cepis"))
    return candidates.first { url in
      var isDirectory: ObjCBool = false
      return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
        && !isDirectory.boolValue && FileManager.default.isExecutableFile(atPath: url.path)
    }
  }()

  static func requireBinary() throws -> URL {
    guard let binary else {
      throw CLIError(
        description:
          "the cepis binary was not found (looked next to the test bundle and in "
          + "\(packageRoot.path)/.build/debug/cepis): run `swift build` first")
    }
    return binary
  }

  /// The transport the binary is told to use (`CEPIS_TRANSPORT`) in the current test; `nil`
  /// leaves the build's default.
  @TaskLocal static var transport: Transport.Kind?

  static func environment(_ extra: [String: String]) -> [String: String] {
    var env = ProcessInfo.processInfo.environment
    env["CEPIS_TRANSPORT"] = transport?.rawValue
    env["CEPIS_BASE_URL"] = nil
    env["CEPIS_FALLBACK"] = nil
    env["CPFHUB_API_KEY"] = nil
    env["CPFHUB_BASE_URL"] = nil
    env["NO_COLOR"] = nil
    // No test shares the user's address cache, nor another test's: a test that wants one
    // names its own file.
    env["CEPIS_CACHE"] = "off"
    env["XDG_CACHE_HOME"] = nil
    for (key, value) in extra { env[key] = value }
    return env
  }

  /// Starts the binary (or `executable`, given the binary's path among `arguments`); stdout and
  /// stderr go to temporary files.
  static func start(
    _ arguments: [String], stdin: Data? = nil, env: [String: String] = [:],
    stdoutFile: URL? = nil, executable: URL? = nil
  ) throws -> Running {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("cepis-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let outURL = stdoutFile ?? directory.appendingPathComponent("stdout")
    let errURL = directory.appendingPathComponent("stderr")
    let inURL = directory.appendingPathComponent("stdin")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: inURL.path, contents: stdin ?? Data())
    let output = try FileHandle(forWritingTo: outURL)
    let errors = try FileHandle(forWritingTo: errURL)
    let input = try FileHandle(forReadingFrom: inURL)
    defer {
      for handle in [output, errors, input] { try? handle.close() }
    }
    let child = try ChildProcess.spawn(
      try executable ?? requireBinary(), arguments, environment: environment(env),
      stdin: .file(input), stdout: .file(output), stderr: .file(errors))
    return Running(child: child, stdoutURL: outURL, stderrURL: errURL, directory: directory)
  }

  /// Runs the binary to completion (killing it after `timeout` seconds and failing).
  static func run(
    _ arguments: [String], stdin: Data? = nil, env: [String: String] = [:],
    timeout: TimeInterval = 60
  ) async throws -> RunResult {
    let running = try start(arguments, stdin: stdin, env: env)
    return try await running.wait(timeout: timeout)
  }
}

/// Every transport the `cepis` binary of this build has (or those `CEPIS_TEST_TRANSPORTS`
/// names): network tests run once over each.
let cliTransports = testedTransportKinds

/// A started `cepis` process.
struct Running {
  let child: ChildProcess
  let stdoutURL: URL
  let stderrURL: URL
  let directory: URL

  func signal(_ number: Int32) { child.signal(number) }

  /// Waits for the process to end; kills it and throws after `timeout` seconds.
  func wait(timeout: TimeInterval = 60) async throws -> RunResult {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
      if let ended = child.exited() {
        let result = RunResult(
          status: ended.status,
          stdout: (try? Data(contentsOf: stdoutURL)) ?? Data(),
          stderr: (try? Data(contentsOf: stderrURL)) ?? Data())
        try? FileManager.default.removeItem(at: directory)
        return result
      }
      if Date() > deadline {
        child.signal(SIGTERM)
        try? await Task.sleep(nanoseconds: 500_000_000)
        child.signal(SIGKILL)
        _ = try? await child.termination()
        throw CLIError(
          description: "cepis \(child.arguments) did not finish within \(Int(timeout)) s; killed")
      }
      try await Task.sleep(nanoseconds: 10_000_000)
    }
  }
}

/// A temporary directory removed by the caller.
func temporaryDirectory() throws -> URL {
  let url = FileManager.default.temporaryDirectory
    .appendingPathComponent("cepis-cli-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}
